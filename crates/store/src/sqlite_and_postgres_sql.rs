//! The SQL both backends run alike, written once with PostgreSQL's `$N` placeholders; SQLite
//! gets each statement with `?N` instead, made once on first use (to SQLite `$N` is a *named*
//! parameter numbered by first appearance, so `SET x = $3 WHERE owner_id = $1` would bind the
//! wrong values). A statement whose column list is one of `common.rs`'s is built once, on first
//! use. What differs (a PostgreSQL cast or collation, a statement built from a backend's own
//! parts) stays in each backend's own file.

use std::sync::OnceLock;

use crate::common::{
    AGENT_COLUMNS, OWNER_COLUMNS, SKILL_COLUMNS, SNIPPET_COLUMNS, VERSION_COLUMNS,
};

/// One statement both backends run.
pub(crate) struct SharedSql {
    written: Written,
    built: OnceLock<String>,
    sqlite: OnceLock<String>,
}

/// How a statement is written: as one literal, or built from the shared column lists.
enum Written {
    Literal(&'static str),
    Built(fn() -> String),
}

impl SharedSql {
    pub(crate) const fn new(postgres: &'static str) -> SharedSql {
        SharedSql {
            written: Written::Literal(postgres),
            built: OnceLock::new(),
            sqlite: OnceLock::new(),
        }
    }

    /// A statement built (once, on first use) from the column lists of `common.rs`.
    pub(crate) const fn built(postgres: fn() -> String) -> SharedSql {
        SharedSql {
            written: Written::Built(postgres),
            built: OnceLock::new(),
            sqlite: OnceLock::new(),
        }
    }

    /// The statement as PostgreSQL takes it.
    pub(crate) fn postgres(&self) -> &str {
        match self.written {
            Written::Literal(text) => text,
            Written::Built(build) => self.built.get_or_init(build),
        }
    }

    /// The statement as SQLite takes it: each `$N` written `?N`.
    pub(crate) fn sqlite(&self) -> &str {
        self.sqlite
            .get_or_init(|| self.postgres().replace('$', "?"))
    }
}

// family_tx: what `sqlite/family_tx.rs` and `postgres/family_tx.rs` both run.
pub(crate) static REVIVE_SKILL: SharedSql = SharedSql::new(
    "UPDATE skills SET deleted_at = NULL, agent_id = $3 WHERE owner_id = $1 AND skill_id = $2",
);
pub(crate) static SET_CURRENT_VERSION: SharedSql = SharedSql::new(
    "UPDATE skills SET current_version_id = $3 WHERE owner_id = $1 AND skill_id = $2",
);
pub(crate) static SET_SKILL_TAGS: SharedSql =
    SharedSql::new("UPDATE skills SET tags = $3 WHERE owner_id = $1 AND skill_id = $2");
pub(crate) static CLEAR_SKILL_TAGS: SharedSql =
    SharedSql::new("DELETE FROM skill_tags WHERE owner_id = $1 AND skill_id = $2");
pub(crate) static INSERT_SKILL_TAG: SharedSql =
    SharedSql::new("INSERT INTO skill_tags (owner_id, skill_id, tag) VALUES ($1, $2, $3)");
pub(crate) static SET_HEADER: SharedSql = SharedSql::new(
    "UPDATE skills SET header = $3, goal = $4, preconditions = $5, params = $6, result = $7,
     from_skill = $8, topics = $9, file_digest = COALESCE($10, file_digest)
     WHERE owner_id = $1 AND skill_id = $2",
);
pub(crate) static MARK_SKILL_GONE: SharedSql = SharedSql::new(
    "UPDATE skills SET deleted_at = $3, file_digest = NULL
     WHERE owner_id = $1 AND skill_id = $2 AND deleted_at IS NULL",
);
pub(crate) static NEXT_VERSION_NUMBER: SharedSql = SharedSql::new(
    "SELECT COALESCE(MAX(number), 0) + 1 FROM versions WHERE owner_id = $1 AND skill_id = $2",
);
pub(crate) static SHARING_STATE: SharedSql = SharedSql::new(
    "SELECT s.header = 'skill' AND s.deleted_at IS NULL,
     (SELECT MAX(v.number) FROM versions v
     WHERE v.owner_id = s.owner_id AND v.skill_id = s.skill_id AND v.shared_at IS NOT NULL)
     FROM skills s WHERE s.owner_id = $1 AND s.skill_id = $2",
);
pub(crate) static SHARE_CANDIDATE: SharedSql = SharedSql::new(
    "SELECT v.version_id, v.uses, v.score, o.eager_sharing
     FROM skills s
     JOIN versions v ON v.version_id = s.current_version_id AND v.owner_id = s.owner_id
     JOIN owners o ON o.owner_id = s.owner_id
     WHERE s.owner_id = $1 AND s.skill_id = $2 AND s.header = 'skill' AND s.deleted_at IS NULL
     AND v.shared_at IS NULL",
);
pub(crate) static MARK_VERSION_SHARED: SharedSql =
    SharedSql::new("UPDATE versions SET shared_at = $3 WHERE owner_id = $1 AND version_id = $2");
pub(crate) static UNSHARED_SKILLS_ABOVE: SharedSql = SharedSql::new(
    "SELECT s.skill_id FROM skills s
     JOIN versions v ON v.version_id = s.current_version_id AND v.owner_id = s.owner_id
     WHERE s.owner_id = $1 AND s.agent_id = $2 AND s.header = 'skill' AND s.deleted_at IS NULL
     AND v.shared_at IS NULL AND v.uses >= $3 AND v.score >= $4
     ORDER BY s.skill_id",
);
pub(crate) static SKILL_FOR_SHARING_CHANGE: SharedSql = SharedSql::new("SELECT s.agent_id, s.agent_name || '/' || s.name, s.header, s.deleted_at IS NOT NULL,
     v.number, v.uses, v.score
     FROM skills s LEFT JOIN versions v ON v.version_id = s.current_version_id AND v.owner_id = s.owner_id
     WHERE s.owner_id = $1 AND s.skill_id = $2");
pub(crate) static LOG_SHARING_CHANGE: SharedSql = SharedSql::new(
    "INSERT INTO sharing_events (owner_id, skill_id, agent_id, version_number, kind, reason, at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)",
);
pub(crate) static SNIPPET_OF_EVENT: SharedSql =
    SharedSql::new("SELECT snippet_id FROM snippet_uses WHERE owner_id = $1 AND event_id = $2");
pub(crate) static SNIPPET_WITH_DIGEST: SharedSql = SharedSql::new(
    "SELECT snippet_id FROM snippets WHERE owner_id = $1 AND agent_id = $2 AND digest = $3",
);
pub(crate) static INSERT_SNIPPET_USE: SharedSql = SharedSql::new(
    "INSERT INTO snippet_uses (owner_id, snippet_id, agent_id, at, ok, duration_ms, xp, items,
     goal_progress, deaths, stuck, items_lost, output, event_id, recorded_at,
     failure, unmeasured)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $4, $15, $16)",
);
pub(crate) static AGENT_LESSON_DIGESTS: SharedSql =
    SharedSql::new("SELECT digest, text FROM lessons WHERE owner_id = $1 AND agent_id = $2");
pub(crate) static DELETE_LESSON: SharedSql =
    SharedSql::new("DELETE FROM lessons WHERE owner_id = $1 AND agent_id = $2 AND digest = $3");
pub(crate) static SET_LESSON_LINE: SharedSql = SharedSql::new(
    "UPDATE lessons SET line = $4 WHERE owner_id = $1 AND agent_id = $2 AND digest = $3",
);
pub(crate) static INSERT_LESSON: SharedSql = SharedSql::new(
    "INSERT INTO lessons (owner_id, agent_id, digest, text, line, first_seen_at)
     VALUES ($1, $2, $3, $4, $5, $6)",
);
pub(crate) static AGENT_SKILL_COUNT: SharedSql =
    SharedSql::new("SELECT COUNT(*) FROM skills WHERE owner_id = $1 AND agent_id = $2");

// directory: what `sqlite/directory.rs` and `postgres/directory.rs` both run.
pub(crate) static SET_OWNER_KEY_DIGEST: SharedSql =
    SharedSql::new("UPDATE owners SET key_digest = $2 WHERE owner_id = $1");
pub(crate) static VOCABULARY_DIGEST: SharedSql =
    SharedSql::new("SELECT digest FROM vocabulary_state WHERE id = 1");
pub(crate) static AVATAR_STATE: SharedSql = SharedSql::new(
    "SELECT agent_id, state, reported_at FROM avatar_states
     WHERE owner_id = $1 AND agent_id = $2",
);
pub(crate) static SET_AGENT_MIRROR: SharedSql =
    SharedSql::new("UPDATE agents SET mirror = $3 WHERE owner_id = $1 AND agent_id = $2");
pub(crate) static SET_EAGER_SHARING: SharedSql =
    SharedSql::new("UPDATE owners SET eager_sharing = $2 WHERE owner_id = $1");
pub(crate) static VOCABULARY_TAGS: SharedSql = SharedSql::new("SELECT kind, slug FROM vocabulary");
pub(crate) static SAVE_VOCABULARY_STATE: SharedSql = SharedSql::new(
    "INSERT INTO vocabulary_state (id, digest, entries, built_at) VALUES (1, $1, $2, $3)
     ON CONFLICT (id) DO UPDATE
     SET digest = EXCLUDED.digest, entries = EXCLUDED.entries, built_at = EXCLUDED.built_at",
);
pub(crate) static SAVE_SERVER_HEALTH: SharedSql = SharedSql::new(
    "INSERT INTO server_health (id, saved_at, body) VALUES (1, $1, $2)
     ON CONFLICT (id) DO UPDATE SET saved_at = EXCLUDED.saved_at, body = EXCLUDED.body",
);
pub(crate) static SERVER_HEALTH: SharedSql =
    SharedSql::new("SELECT saved_at, body FROM server_health WHERE id = 1");
pub(crate) static REVOKE_RUNNER_TOKENS: SharedSql = SharedSql::new(
    "UPDATE runner_tokens SET revoked_at = $3
     WHERE owner_id = $1 AND agent_id = $2 AND revoked_at IS NULL",
);
pub(crate) static OPERATOR_TOKEN_VALID: SharedSql =
    SharedSql::new("SELECT 1 FROM operator_tokens WHERE token_hash = $1 AND revoked_at IS NULL");
pub(crate) static OPERATOR_TOKENS: SharedSql = SharedSql::new(
    "SELECT token_id, created_at, revoked_at FROM operator_tokens ORDER BY token_id",
);
pub(crate) static DROP_EXPIRED_SESSIONS: SharedSql =
    SharedSql::new("DELETE FROM dashboard_sessions WHERE owner_id = $1 AND expires_at <= $2");
pub(crate) static LIVE_SESSION: SharedSql = SharedSql::new(
    "SELECT owner_id, csrf_token, expires_at FROM dashboard_sessions
     WHERE session_hash = $1 AND expires_at > $2",
);
pub(crate) static END_SESSION: SharedSql =
    SharedSql::new("DELETE FROM dashboard_sessions WHERE owner_id = $1 AND session_hash = $2");

// records: what `sqlite/records.rs` and `postgres/records.rs` both run.
pub(crate) static UNRECORDED_SINCE: SharedSql = SharedSql::new(
    "SELECT event_id, at, reason, detail, output FROM unrecorded_calls
     WHERE owner_id = $1 AND agent_id = $2 AND at >= $3 ORDER BY at, event_id",
);
pub(crate) static USE_COUNT: SharedSql =
    SharedSql::new("SELECT COUNT(*) FROM uses WHERE owner_id = $1");
pub(crate) static SNIPPET_SUGGESTIONS: SharedSql = SharedSql::new(
    "SELECT group_key, suggested_runs FROM snippet_suggestions
     WHERE owner_id = $1 AND agent_id = $2 AND suggested_at >= $3",
);
pub(crate) static UNMEASURED_RUNS_OF_AGENT: SharedSql = SharedSql::new(
    "SELECT unmeasured, count(*) FROM uses
     WHERE owner_id = $1 AND agent_id = $2 AND at >= $3 AND unmeasured IS NOT NULL
     GROUP BY unmeasured ORDER BY count(*) DESC, unmeasured",
);
pub(crate) static UNMEASURED_RUNS_OF_SKILL: SharedSql = SharedSql::new(
    "SELECT u.unmeasured, count(*) FROM uses u
     JOIN versions v ON v.owner_id = u.owner_id AND v.version_id = u.version_id
     WHERE u.owner_id = $1 AND v.skill_id = $2 AND u.at >= $3 AND u.unmeasured IS NOT NULL
     GROUP BY u.unmeasured ORDER BY count(*) DESC, u.unmeasured",
);

// family: what `sqlite/family.rs` and `postgres/family.rs` both run.
pub(crate) static SKILL_AGENT: SharedSql =
    SharedSql::new("SELECT agent_id FROM skills WHERE owner_id = $1 AND skill_id = $2");
pub(crate) static SHARING_CHANGES: SharedSql = SharedSql::new(
    "SELECT e.skill_id, s.agent_name || '/' || s.name, e.kind, e.version_number, e.reason, e.at
     FROM sharing_events e JOIN skills s ON s.skill_id = e.skill_id AND s.owner_id = e.owner_id
     WHERE e.owner_id = $1 AND e.agent_id = $2 AND e.at >= $3
     ORDER BY e.at, e.sharing_event_id",
);
pub(crate) static LESSONS: SharedSql = SharedSql::new(
    "SELECT l.agent_id, a.name, l.text, l.line, l.first_seen_at
     FROM lessons l JOIN agents a ON a.agent_id = l.agent_id AND a.owner_id = l.owner_id
     WHERE l.owner_id = $1
     ORDER BY l.first_seen_at DESC, l.line DESC, l.lesson_id DESC",
);

// views: what `sqlite/views.rs` and `postgres/views.rs` both run.
pub(crate) static GONE_SKILLS: SharedSql = SharedSql::new(
    "SELECT s.skill_id FROM skills s
     WHERE s.owner_id = $1 AND s.agent_id = $2 AND s.deleted_at IS NOT NULL
     ORDER BY s.deleted_at DESC, s.skill_id DESC",
);

// Statements whose column lists are the shared constants of `common.rs`: written once, built
// on first use.
pub(crate) static AGENT_BY_NAME: SharedSql =
    SharedSql::built(|| format!("SELECT {AGENT_COLUMNS} FROM agents WHERE name = $1"));
pub(crate) static SKILL_AT_PATH: SharedSql = SharedSql::built(|| {
    format!(
        "SELECT {SKILL_COLUMNS} FROM skills s WHERE s.owner_id = $1 AND s.agent_id = $2 AND s.path = $3"
    )
});
pub(crate) static SKILL_BY_NAME: SharedSql = SharedSql::built(|| {
    format!(
        "SELECT {SKILL_COLUMNS} FROM skills s WHERE s.owner_id = $1 AND s.agent_name = $2 AND s.name = $3
                 ORDER BY s.deleted_at IS NOT NULL, s.skill_id DESC LIMIT 1"
    )
});
pub(crate) static VERSIONS_OF_SKILL: SharedSql = SharedSql::built(|| {
    format!(
        "SELECT {VERSION_COLUMNS} FROM versions v WHERE v.owner_id = $1 AND v.skill_id = $2 ORDER BY v.number DESC"
    )
});
pub(crate) static OWNER_BY_NAME: SharedSql =
    SharedSql::built(|| format!("SELECT {OWNER_COLUMNS} FROM owners WHERE name = $1"));
pub(crate) static OWNER_BY_ID: SharedSql =
    SharedSql::built(|| format!("SELECT {OWNER_COLUMNS} FROM owners WHERE owner_id = $1"));
pub(crate) static AGENT_OF_RUNNER_TOKEN: SharedSql = SharedSql::built(|| {
    format!(
        "SELECT {AGENT_COLUMNS} FROM agents WHERE agent_id =
                   (SELECT agent_id FROM runner_tokens WHERE token_hash = $1 AND revoked_at IS NULL)"
    )
});
pub(crate) static SKILL_OF_AGENT_NAME_AT_PATH: SharedSql = SharedSql::built(|| {
    format!(
        "SELECT {SKILL_COLUMNS} FROM skills s WHERE s.owner_id = $1 AND s.agent_name = $2 AND s.path = $3"
    )
});
pub(crate) static SKILL_BY_ID: SharedSql = SharedSql::built(|| {
    format!("SELECT {SKILL_COLUMNS} FROM skills s WHERE s.owner_id = $1 AND s.skill_id = $2")
});
pub(crate) static VERSION_WITH_DIGEST: SharedSql = SharedSql::built(|| {
    format!(
        "SELECT {VERSION_COLUMNS} FROM versions v WHERE v.owner_id = $1 AND v.skill_id = $2 AND v.digest = $3"
    )
});
pub(crate) static SNIPPET_BY_ID: SharedSql = SharedSql::built(|| {
    format!("SELECT {SNIPPET_COLUMNS} FROM snippets WHERE owner_id = $1 AND snippet_id = $2")
});
pub(crate) static VERSION_BY_ID: SharedSql = SharedSql::built(|| {
    format!("SELECT {VERSION_COLUMNS} FROM versions v WHERE v.owner_id = $1 AND v.version_id = $2")
});
pub(crate) static AGENT_OF_OWNER: SharedSql = SharedSql::built(|| {
    format!("SELECT {AGENT_COLUMNS} FROM agents WHERE owner_id = $1 AND agent_id = $2")
});

#[cfg(test)]
mod tests {
    use super::*;

    /// Every statement here, by name.
    static ALL: &[(&str, &SharedSql)] = &[
        ("REVIVE_SKILL", &REVIVE_SKILL),
        ("SET_CURRENT_VERSION", &SET_CURRENT_VERSION),
        ("SET_SKILL_TAGS", &SET_SKILL_TAGS),
        ("CLEAR_SKILL_TAGS", &CLEAR_SKILL_TAGS),
        ("INSERT_SKILL_TAG", &INSERT_SKILL_TAG),
        ("SET_HEADER", &SET_HEADER),
        ("MARK_SKILL_GONE", &MARK_SKILL_GONE),
        ("NEXT_VERSION_NUMBER", &NEXT_VERSION_NUMBER),
        ("SHARING_STATE", &SHARING_STATE),
        ("SHARE_CANDIDATE", &SHARE_CANDIDATE),
        ("MARK_VERSION_SHARED", &MARK_VERSION_SHARED),
        ("UNSHARED_SKILLS_ABOVE", &UNSHARED_SKILLS_ABOVE),
        ("SKILL_FOR_SHARING_CHANGE", &SKILL_FOR_SHARING_CHANGE),
        ("LOG_SHARING_CHANGE", &LOG_SHARING_CHANGE),
        ("SNIPPET_OF_EVENT", &SNIPPET_OF_EVENT),
        ("SNIPPET_WITH_DIGEST", &SNIPPET_WITH_DIGEST),
        ("INSERT_SNIPPET_USE", &INSERT_SNIPPET_USE),
        ("AGENT_LESSON_DIGESTS", &AGENT_LESSON_DIGESTS),
        ("DELETE_LESSON", &DELETE_LESSON),
        ("SET_LESSON_LINE", &SET_LESSON_LINE),
        ("INSERT_LESSON", &INSERT_LESSON),
        ("AGENT_SKILL_COUNT", &AGENT_SKILL_COUNT),
        ("SET_OWNER_KEY_DIGEST", &SET_OWNER_KEY_DIGEST),
        ("VOCABULARY_DIGEST", &VOCABULARY_DIGEST),
        ("AVATAR_STATE", &AVATAR_STATE),
        ("SET_AGENT_MIRROR", &SET_AGENT_MIRROR),
        ("SET_EAGER_SHARING", &SET_EAGER_SHARING),
        ("VOCABULARY_TAGS", &VOCABULARY_TAGS),
        ("SAVE_VOCABULARY_STATE", &SAVE_VOCABULARY_STATE),
        ("SAVE_SERVER_HEALTH", &SAVE_SERVER_HEALTH),
        ("SERVER_HEALTH", &SERVER_HEALTH),
        ("REVOKE_RUNNER_TOKENS", &REVOKE_RUNNER_TOKENS),
        ("OPERATOR_TOKEN_VALID", &OPERATOR_TOKEN_VALID),
        ("OPERATOR_TOKENS", &OPERATOR_TOKENS),
        ("DROP_EXPIRED_SESSIONS", &DROP_EXPIRED_SESSIONS),
        ("LIVE_SESSION", &LIVE_SESSION),
        ("END_SESSION", &END_SESSION),
        ("UNRECORDED_SINCE", &UNRECORDED_SINCE),
        ("USE_COUNT", &USE_COUNT),
        ("SNIPPET_SUGGESTIONS", &SNIPPET_SUGGESTIONS),
        ("UNMEASURED_RUNS_OF_AGENT", &UNMEASURED_RUNS_OF_AGENT),
        ("UNMEASURED_RUNS_OF_SKILL", &UNMEASURED_RUNS_OF_SKILL),
        ("SKILL_AGENT", &SKILL_AGENT),
        ("SHARING_CHANGES", &SHARING_CHANGES),
        ("LESSONS", &LESSONS),
        ("GONE_SKILLS", &GONE_SKILLS),
        ("AGENT_BY_NAME", &AGENT_BY_NAME),
        ("SKILL_AT_PATH", &SKILL_AT_PATH),
        ("SKILL_BY_NAME", &SKILL_BY_NAME),
        ("VERSIONS_OF_SKILL", &VERSIONS_OF_SKILL),
        ("OWNER_BY_NAME", &OWNER_BY_NAME),
        ("OWNER_BY_ID", &OWNER_BY_ID),
        ("AGENT_OF_RUNNER_TOKEN", &AGENT_OF_RUNNER_TOKEN),
        ("SKILL_OF_AGENT_NAME_AT_PATH", &SKILL_OF_AGENT_NAME_AT_PATH),
        ("SKILL_BY_ID", &SKILL_BY_ID),
        ("VERSION_WITH_DIGEST", &VERSION_WITH_DIGEST),
        ("SNIPPET_BY_ID", &SNIPPET_BY_ID),
        ("VERSION_BY_ID", &VERSION_BY_ID),
        ("AGENT_OF_OWNER", &AGENT_OF_OWNER),
    ];

    #[test]
    fn sqlite_gets_each_placeholder_by_its_number() {
        let statement = SharedSql::new("UPDATE t SET a = $3 WHERE b = $1 AND c = $2 AND d = $10");
        assert_eq!(
            statement.sqlite(),
            "UPDATE t SET a = ?3 WHERE b = ?1 AND c = ?2 AND d = ?10"
        );
        assert_eq!(
            statement.postgres(),
            "UPDATE t SET a = $3 WHERE b = $1 AND c = $2 AND d = $10"
        );
    }

    #[test]
    fn every_shared_statement_prepares_on_sqlite() {
        let store = crate::SqliteStore::open_in_memory().unwrap();
        store.with_connection(|conn| {
            for (name, sql) in ALL {
                if let Err(err) = conn.prepare(sql.sqlite()) {
                    panic!("{name} does not prepare on SQLite: {err}");
                }
            }
        });
    }
}
