//! Owners, agents, tokens, sessions, avatar states and the topic-tag vocabulary on SQLite.

use crate::sqlite_and_postgres_sql as sql;
use crate::{DeletedAgent, Directory, rules};
use std::path::Path;

use rusqlite::{OptionalExtension, params};

use super::rows::{agent_from, owner_from};
use super::{SqliteStore, db_err, name_taken};
use crate::common::{AGENT_COLUMNS, OWNER_COLUMNS};
use crate::{
    Agent, AgentId, Millis, OperatorRevoke, OperatorToken, OperatorTokenKey, Owner, OwnerId,
    Result, Session, StoreError, WealthPoint, wealth_since,
};

/// Turns every owner's key still stored as itself (a library made before keys were digested)
/// into its digest. Runs inside the migration's transaction, so the rename and the rewrite land
/// together; idempotent, since a digest is left as it is.
pub(super) fn digest_plain_owner_keys(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    let plain: Vec<(i64, String)> = {
        let mut stmt = tx
            .prepare("SELECT owner_id, key_digest FROM owners")
            .map_err(db_err)?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?
    };
    // Without `secure_delete` the old cell's bytes stay in the page's free space, and
    // `grep -a mrk_` would still find the key in the file.
    tx.pragma_update(None, "secure_delete", true)
        .map_err(db_err)?;
    for (id, stored) in plain {
        if !mindrune_core::is_secret_digest(&stored) {
            tx.execute(
                sql::SET_OWNER_KEY_DIGEST.sqlite(),
                params![id, mindrune_core::secret_digest(&stored)],
            )
            .map_err(db_err)?;
        }
    }
    tx.pragma_update(None, "secure_delete", false)
        .map_err(db_err)?;
    Ok(())
}

pub(super) fn disk_space(store: &SqliteStore) -> Option<crate::DiskSpace> {
    let file = Path::new(&store.location);
    let folder = file.parent().filter(|f| !f.as_os_str().is_empty())?;
    let stat = rustix::fs::statvfs(folder).ok()?;
    Some(crate::DiskSpace {
        folder: folder.display().to_string(),
        available: stat.f_bavail.saturating_mul(stat.f_frsize),
    })
}

fn operator_token_from(row: &rusqlite::Row<'_>) -> rusqlite::Result<OperatorToken> {
    Ok(OperatorToken {
        id: row.get(0)?,
        created_at: row.get(1)?,
        revoked_at: row.get(2)?,
    })
}

impl Directory for SqliteStore {
    fn create_owner(&self, name: &str, key_digest: &str, now: Millis) -> Result<Owner> {
        crate::common::check_key_digest(key_digest)?;
        let inner = self.lock();
        let result = inner.conn.execute(
            "INSERT INTO owners (name, key_digest, created_at) VALUES (?1, ?2, ?3)",
            params![name, key_digest, now],
        );
        match result {
            Ok(_) => {}
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                let taken = name_taken(&inner.conn, "owners", name)?;
                return Err(crate::common::name_taken("owner", name, &taken));
            }
            Err(e) => return Err(db_err(e)),
        }
        let id = inner.conn.last_insert_rowid();
        Ok(Owner {
            id: OwnerId(id),
            name: name.into(),
            key_digest: key_digest.into(),
            eager_sharing: false,
            created_at: now,
        })
    }

    fn replace_owner_key(&self, owner: OwnerId, key_digest: &str) -> Result<()> {
        crate::common::check_key_digest(key_digest)?;
        let inner = self.lock();
        let changed = inner
            .conn
            .execute(
                "UPDATE owners SET key_digest = ?2 WHERE owner_id = ?1",
                params![owner.0, key_digest],
            )
            .map_err(db_err)?;
        if changed == 0 {
            return Err(StoreError::NotFound(format!("owner {}", owner.0)));
        }
        Ok(())
    }

    fn owner_by_name(&self, name: &str) -> Result<Option<Owner>> {
        let inner = self.lock();
        inner
            .conn
            .query_row(sql::OWNER_BY_NAME.sqlite(), [name], owner_from)
            .optional()
            .map_err(db_err)
    }

    fn owner(&self, owner: OwnerId) -> Result<Owner> {
        let inner = self.lock();
        inner
            .conn
            .query_row(sql::OWNER_BY_ID.sqlite(), [owner.0], owner_from)
            .optional()
            .map_err(db_err)?
            .ok_or_else(|| StoreError::NotFound(format!("owner {}", owner.0)))
    }

    fn owners(&self) -> Result<Vec<Owner>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(&format!("SELECT {OWNER_COLUMNS} FROM owners ORDER BY name"))
            .map_err(db_err)?;
        let owners = statement
            .query_map([], owner_from)
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(owners)
    }

    fn create_agent(
        &self,
        owner: OwnerId,
        name: &str,
        workspace: &str,
        now: Millis,
    ) -> Result<Agent> {
        let inner = self.lock();
        let result = inner.conn.execute(
            "INSERT INTO agents (owner_id, name, workspace, created_at)
             SELECT owner_id, ?2, ?3, ?4 FROM owners WHERE owner_id = ?1",
            params![owner.0, name, workspace, now],
        );
        match result {
            Ok(0) => Err(StoreError::NotFound(format!("owner {}", owner.0))),
            Ok(_) => Ok(Agent {
                id: AgentId(inner.conn.last_insert_rowid()),
                owner,
                name: name.into(),
                workspace: workspace.into(),
                created_at: now,
                mirror_refreshed_at: None,
                last_turn_at: None,
                last_wrapup_at: None,
                mirror: None,
            }),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                let taken = name_taken(&inner.conn, "agents", name)?;
                Err(crate::common::name_taken("agent", name, &taken))
            }
            Err(e) => Err(db_err(e)),
        }
    }

    fn agents(&self, owner: OwnerId) -> Result<Vec<Agent>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(&format!(
                "SELECT {AGENT_COLUMNS} FROM agents WHERE owner_id = ?1 ORDER BY name"
            ))
            .map_err(db_err)?;
        let agents = statement
            .query_map([owner.0], agent_from)
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(agents)
    }

    fn note_wrapup(&self, owner: OwnerId, agent: AgentId, at: Millis) -> Result<()> {
        self.set_agent_time(owner, agent, "last_wrapup_at", at)
    }

    fn set_agent_mirror(&self, owner: OwnerId, agent: AgentId, mirror: Option<&str>) -> Result<()> {
        let inner = self.lock();
        let changed = inner
            .conn
            .execute(
                sql::SET_AGENT_MIRROR.sqlite(),
                params![owner.0, agent.0, mirror],
            )
            .map_err(db_err)?;
        if changed == 0 {
            return Err(StoreError::NotFound(format!("agent {}", agent.0)));
        }
        Ok(())
    }

    fn set_eager_sharing(&self, owner: OwnerId, eager: bool) -> Result<()> {
        let inner = self.lock();
        let changed = inner
            .conn
            .execute(sql::SET_EAGER_SHARING.sqlite(), params![owner.0, eager])
            .map_err(db_err)?;
        if changed == 0 {
            return Err(StoreError::NotFound(format!("owner {}", owner.0)));
        }
        Ok(())
    }

    fn note_turn_end(&self, owner: OwnerId, agent: AgentId, at: Millis) -> Result<()> {
        self.set_agent_time(owner, agent, "last_turn_at", at)
    }

    fn note_mirror_refresh(&self, owner: OwnerId, agent: AgentId, at: Millis) -> Result<()> {
        self.set_agent_time(owner, agent, "mirror_refreshed_at", at)
    }

    fn replace_vocabulary(
        &self,
        entries: &[crate::VocabularyEntry],
        now: Millis,
    ) -> Result<crate::VocabularyChange> {
        let replacement = rules::vocabulary::replacement(entries)?;
        self.write(|tx, _| {
            let tx = tx.conn()?;
            let existing: std::collections::HashSet<(String, String)> = tx
                .prepare_cached(sql::VOCABULARY_TAGS.sqlite())
                .map_err(db_err)?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(db_err)?
                .collect::<rusqlite::Result<_>>()
                .map_err(db_err)?;
            for (kind, slug) in replacement.gone(&existing) {
                tx.execute(
                    "DELETE FROM vocabulary WHERE kind = ?1 AND slug = ?2",
                    params![kind, slug],
                )
                .map_err(db_err)?;
            }
            let mut upsert = tx
                .prepare_cached(
                    "INSERT INTO vocabulary (kind, slug, title, source, aliases, added_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (kind, slug) DO UPDATE
                     SET title = excluded.title, source = excluded.source, aliases = excluded.aliases",
                )
                .map_err(db_err)?;
            for ((kind, slug), entry) in &replacement.wanted {
                upsert
                    .execute(params![
                        kind,
                        slug,
                        entry.title,
                        entry.source.as_str(),
                        rules::vocabulary::aliases_of(entry),
                        now
                    ])
                    .map_err(db_err)?;
            }
            tx.execute(
                sql::SAVE_VOCABULARY_STATE.sqlite(),
                params![replacement.digest, replacement.wanted.len() as i64, now],
            )
            .map_err(db_err)?;
            Ok(replacement.change(&existing))
        })
    }

    fn save_server_health(&self, saved_at: Millis, body: &str) -> Result<()> {
        self.write(|tx, _| {
            tx.conn()?
                .execute(sql::SAVE_SERVER_HEALTH.sqlite(), params![saved_at, body])
                .map_err(db_err)?;
            Ok(())
        })
    }

    fn server_health(&self) -> Result<Option<(Millis, String)>> {
        let inner = self.lock();
        inner
            .conn
            .query_row(sql::SERVER_HEALTH.sqlite(), [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(db_err)
    }

    fn issue_runner_token(
        &self,
        owner: OwnerId,
        agent: AgentId,
        token_hash: &str,
        now: Millis,
    ) -> Result<()> {
        let inner = self.lock();
        let inserted = inner
            .conn
            .execute(
                "INSERT INTO runner_tokens (owner_id, agent_id, token_hash, created_at)
                 SELECT owner_id, agent_id, ?3, ?4 FROM agents WHERE owner_id = ?1 AND agent_id = ?2",
                params![owner.0, agent.0, token_hash, now],
            )
            .map_err(db_err)?;
        if inserted == 0 {
            return Err(StoreError::NotFound(format!("agent {}", agent.0)));
        }
        Ok(())
    }

    fn agent_by_runner_token(&self, token_hash: &str) -> Result<Option<Agent>> {
        self.read_committed(|conn| {
            conn.prepare_cached(sql::AGENT_OF_RUNNER_TOKEN.sqlite())
                .map_err(db_err)?
                .query_row([token_hash], agent_from)
                .optional()
                .map_err(db_err)
        })
    }

    fn revoke_runner_tokens(&self, owner: OwnerId, agent: AgentId, now: Millis) -> Result<usize> {
        let inner = self.lock();
        inner
            .conn
            .execute(
                sql::REVOKE_RUNNER_TOKENS.sqlite(),
                params![owner.0, agent.0, now],
            )
            .map_err(db_err)
    }

    fn issue_operator_token(&self, token_hash: &str, now: Millis) -> Result<i64> {
        let inner = self.lock();
        inner
            .conn
            .execute(
                "INSERT INTO operator_tokens (token_hash, created_at) VALUES (?1, ?2)",
                params![token_hash, now],
            )
            .map_err(db_err)?;
        Ok(inner.conn.last_insert_rowid())
    }

    fn operator_token_valid(&self, token_hash: &str) -> Result<bool> {
        let inner = self.lock();
        inner
            .conn
            .prepare_cached(sql::OPERATOR_TOKEN_VALID.sqlite())
            .map_err(db_err)?
            .query_row([token_hash], |_| Ok(()))
            .optional()
            .map(|found| found.is_some())
            .map_err(db_err)
    }

    fn operator_tokens(&self) -> Result<Vec<OperatorToken>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare(sql::OPERATOR_TOKENS.sqlite())
            .map_err(db_err)?;
        statement
            .query_map([], operator_token_from)
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)
    }

    fn revoke_operator_token(
        &self,
        key: OperatorTokenKey<'_>,
        now: Millis,
    ) -> Result<OperatorRevoke> {
        let inner = self.lock();
        let found = match key {
            OperatorTokenKey::Digest(digest) => inner.conn.query_row(
                "SELECT token_id, created_at, revoked_at FROM operator_tokens WHERE token_hash = ?1",
                [digest],
                operator_token_from,
            ),
            OperatorTokenKey::Id(id) => inner.conn.query_row(
                "SELECT token_id, created_at, revoked_at FROM operator_tokens WHERE token_id = ?1",
                [id],
                operator_token_from,
            ),
        }
        .optional()
        .map_err(db_err)?;
        let Some(mut token) = found else {
            return Ok(OperatorRevoke::Unknown);
        };
        if token.revoked_at.is_some() {
            return Ok(OperatorRevoke::AlreadyRevoked(token));
        }
        // The store's lock is held since the read, so no other handle of this process revoked it
        // meanwhile; `revoked_at IS NULL` keeps another process's earlier revocation time.
        inner
            .conn
            .execute(
                "UPDATE operator_tokens SET revoked_at = ?2 WHERE token_id = ?1 AND revoked_at IS NULL",
                params![token.id, now],
            )
            .map_err(db_err)?;
        token.revoked_at = Some(now);
        Ok(OperatorRevoke::Revoked(token))
    }

    fn create_session(
        &self,
        owner: OwnerId,
        session_hash: &str,
        csrf_token: &str,
        now: Millis,
        expires_at: Millis,
    ) -> Result<()> {
        let inner = self.lock();
        // Expired sessions are swept whenever a new one starts.
        inner
            .conn
            .execute(sql::DROP_EXPIRED_SESSIONS.sqlite(), params![owner.0, now])
            .map_err(db_err)?;
        let inserted = inner
            .conn
            .execute(
                "INSERT INTO dashboard_sessions (owner_id, session_hash, csrf_token, created_at, expires_at)
                 SELECT owner_id, ?2, ?3, ?4, ?5 FROM owners WHERE owner_id = ?1",
                params![owner.0, session_hash, csrf_token, now, expires_at],
            )
            .map_err(db_err)?;
        if inserted == 0 {
            return Err(StoreError::NotFound(format!("owner {}", owner.0)));
        }
        Ok(())
    }

    fn session(&self, session_hash: &str, now: Millis) -> Result<Option<Session>> {
        let inner = self.lock();
        inner
            .conn
            .prepare_cached(sql::LIVE_SESSION.sqlite())
            .map_err(db_err)?
            .query_row(params![session_hash, now], |r| {
                Ok(Session {
                    owner: OwnerId(r.get(0)?),
                    csrf_token: r.get(1)?,
                    expires_at: r.get(2)?,
                })
            })
            .optional()
            .map_err(db_err)
    }

    fn end_session(&self, owner: OwnerId, session_hash: &str) -> Result<()> {
        let inner = self.lock();
        inner
            .conn
            .execute(sql::END_SESSION.sqlite(), params![owner.0, session_hash])
            .map_err(db_err)?;
        Ok(())
    }

    fn wealth_history(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<WealthPoint>> {
        let inner = self.lock();
        inner
            .conn
            .prepare_cached(
                "SELECT hour, coins, reported_at, total_xp, total_level FROM avatar_wealth
                 WHERE owner_id = ?1 AND agent_id = ?2 AND hour >= ?3
                 ORDER BY hour",
            )
            .map_err(db_err)?
            .query_map(params![owner.0, agent.0, wealth_since(since)], |r| {
                Ok(WealthPoint {
                    hour: r.get::<_, i64>(0)?.saturating_mul(1000),
                    coins: r.get(1)?,
                    reported_at: r.get(2)?,
                    total_xp: r.get(3)?,
                    total_level: r.get(4)?,
                })
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(db_err)
    }

    fn delete_agent(&self, owner: OwnerId, agent: AgentId) -> Result<DeletedAgent> {
        let deleted = self.write(|tx, _| rules::family::delete_agent(tx, owner, agent));
        // Cached windows of removed versions must not outlive them.
        self.lock().windows.clear();
        deleted
    }
}
