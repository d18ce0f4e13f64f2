//! The directory on PostgreSQL: owners, agents, the topic-tag vocabulary, runner and operator
//! tokens, dashboard sessions and each avatar's reported state.
//!
//! These are the look-ups that find a family (by a name, a token's digest or a session's digest)
//! and the small records kept beside it. A change to what belongs to one family (its agents, an
//! agent's tokens and times, its sessions, its avatars' states, its sharing switch) runs as that
//! family's write, under its lock; owners, operator tokens and the vocabulary belong to no family
//! and take a global write. Text is ordered with the `C` collation, byte by byte, as SQLite orders
//! it, whatever the database's own collation.

use crate::sqlite_and_postgres_sql as sql;
use crate::{DeletedAgent, Directory, rules};
use std::collections::HashSet;

use super::rows::{AGENT_COLUMNS, OWNER_COLUMNS, agent_from, all, col, owner_from};
use super::{Fail, PgResult, PgStore, VOCABULARY_LOCK, is_unique_violation};
use crate::{
    Agent, AgentId, Millis, OperatorRevoke, OperatorToken, OperatorTokenKey, Owner, OwnerId,
    Result, Session, StoreError, VocabularyChange, VocabularyEntry, WealthPoint, wealth_since,
};

/// Turns a unique constraint's failure into the store's conflict, leaving other failures as
/// they are.
fn conflict_on_unique(err: postgres::Error, conflict: impl FnOnce() -> StoreError) -> Fail {
    let fail = Fail::from(err);
    if is_unique_violation(&fail) {
        Fail::Store(conflict())
    } else {
        fail
    }
}

fn owner_taken(name: &str, taken: &str) -> StoreError {
    crate::common::name_taken("owner", name, taken)
}

fn agent_taken(name: &str, taken: &str) -> StoreError {
    crate::common::name_taken("agent", name, taken)
}

/// The agent times a note may set (a column name, never the caller's text).
#[derive(Clone, Copy)]
enum AgentTime {
    Wrapup,
    TurnEnd,
    MirrorRefresh,
}

impl AgentTime {
    fn column(self) -> &'static str {
        match self {
            AgentTime::Wrapup => "last_wrapup_at",
            AgentTime::TurnEnd => "last_turn_at",
            AgentTime::MirrorRefresh => "mirror_refreshed_at",
        }
    }
}

/// Sets one of an agent's times; an agent not in the family is not found.
fn set_agent_time(
    store: &PgStore,
    owner: OwnerId,
    agent: AgentId,
    time: AgentTime,
    at: Millis,
) -> Result<()> {
    let sql = format!(
        "UPDATE agents SET {} = $3 WHERE owner_id = $1 AND agent_id = $2",
        time.column()
    );
    store.write(owner, |tx| {
        let changed = tx.execute(&sql, &[&owner.0, &agent.0, &at])?;
        if changed == 0 {
            return Err(StoreError::NotFound(format!("agent {}", agent.0)).into());
        }
        Ok(())
    })
}

fn operator_token_from(row: &postgres::Row) -> PgResult<OperatorToken> {
    Ok(OperatorToken {
        id: col(row, 0)?,
        created_at: col(row, 1)?,
        revoked_at: col(row, 2)?,
    })
}

impl Directory for PgStore {
    fn create_owner(&self, name: &str, key_digest: &str, now: Millis) -> Result<Owner> {
        crate::common::check_key_digest(key_digest)?;
        self.write_global(None, |tx| {
            // A taken name is told before the insert, which would use up an id; the unique
            // constraint still catches two processes racing for one name.
            if let Some(row) = tx.query_opt(
                "SELECT name FROM owners WHERE lower(name) = lower($1)",
                &[&name],
            )? {
                return Err(owner_taken(name, &col::<String>(&row, 0)?).into());
            }
            let row = tx
                .query_one(
                    "INSERT INTO owners (name, key_digest, created_at) VALUES ($1, $2, $3)
                     RETURNING owner_id",
                    &[&name, &key_digest, &now],
                )
                .map_err(|err| conflict_on_unique(err, || owner_taken(name, name)))?;
            Ok(Owner {
                id: OwnerId(col(&row, 0)?),
                name: name.into(),
                key_digest: key_digest.into(),
                eager_sharing: false,
                created_at: now,
            })
        })
    }

    fn replace_owner_key(&self, owner: OwnerId, key_digest: &str) -> Result<()> {
        crate::common::check_key_digest(key_digest)?;
        self.write(owner, |tx| {
            let changed = tx.execute(
                sql::SET_OWNER_KEY_DIGEST.postgres(),
                &[&owner.0, &key_digest],
            )?;
            if changed == 0 {
                return Err(StoreError::NotFound(format!("owner {}", owner.0)).into());
            }
            Ok(())
        })
    }

    fn owner_by_name(&self, name: &str) -> Result<Option<Owner>> {
        self.read(|tx| {
            tx.query_opt(sql::OWNER_BY_NAME.postgres(), &[&name])?
                .as_ref()
                .map(owner_from)
                .transpose()
        })
    }

    fn owner(&self, owner: OwnerId) -> Result<Owner> {
        self.read(|tx| {
            let row = tx
                .query_opt(sql::OWNER_BY_ID.postgres(), &[&owner.0])?
                .ok_or_else(|| StoreError::NotFound(format!("owner {}", owner.0)))?;
            owner_from(&row)
        })
    }

    fn owners(&self) -> Result<Vec<Owner>> {
        self.read(|tx| {
            let rows = tx.query(
                &format!("SELECT {OWNER_COLUMNS} FROM owners ORDER BY name COLLATE \"C\""),
                &[],
            )?;
            all(rows, owner_from)
        })
    }

    fn create_agent(
        &self,
        owner: OwnerId,
        name: &str,
        workspace: &str,
        now: Millis,
    ) -> Result<Agent> {
        self.write(owner, |tx| {
            // As for owners: a taken name is told before the insert uses up an id.
            if let Some(row) = tx.query_opt(
                "SELECT name FROM agents WHERE lower(name) = lower($1)",
                &[&name],
            )? {
                return Err(agent_taken(name, &col::<String>(&row, 0)?).into());
            }
            let row = tx
                .query_opt(
                    "INSERT INTO agents (owner_id, name, workspace, created_at)
                     SELECT owner_id, $2::text, $3::text, $4::bigint FROM owners WHERE owner_id = $1
                     RETURNING agent_id",
                    &[&owner.0, &name, &workspace, &now],
                )
                .map_err(|err| conflict_on_unique(err, || agent_taken(name, name)))?
                .ok_or_else(|| StoreError::NotFound(format!("owner {}", owner.0)))?;
            Ok(Agent {
                id: AgentId(col(&row, 0)?),
                owner,
                name: name.into(),
                workspace: workspace.into(),
                created_at: now,
                mirror_refreshed_at: None,
                last_turn_at: None,
                last_wrapup_at: None,
                mirror: None,
            })
        })
    }

    fn agents(&self, owner: OwnerId) -> Result<Vec<Agent>> {
        self.read(|tx| {
            let rows = tx.query(
                &format!(
                    "SELECT {AGENT_COLUMNS} FROM agents WHERE owner_id = $1 ORDER BY name COLLATE \"C\""
                ),
                &[&owner.0],
            )?;
            all(rows, agent_from)
        })
    }

    fn note_wrapup(&self, owner: OwnerId, agent: AgentId, at: Millis) -> Result<()> {
        set_agent_time(self, owner, agent, AgentTime::Wrapup, at)
    }

    fn set_agent_mirror(&self, owner: OwnerId, agent: AgentId, mirror: Option<&str>) -> Result<()> {
        self.write(owner, |tx| {
            let changed = tx.execute(
                sql::SET_AGENT_MIRROR.postgres(),
                &[&owner.0, &agent.0, &mirror],
            )?;
            if changed == 0 {
                return Err(Fail::Store(StoreError::NotFound(format!(
                    "agent {}",
                    agent.0
                ))));
            }
            Ok(())
        })
    }

    fn set_eager_sharing(&self, owner: OwnerId, eager: bool) -> Result<()> {
        self.write(owner, |tx| {
            let changed = tx.execute(sql::SET_EAGER_SHARING.postgres(), &[&owner.0, &eager])?;
            if changed == 0 {
                return Err(StoreError::NotFound(format!("owner {}", owner.0)).into());
            }
            Ok(())
        })
    }

    fn note_turn_end(&self, owner: OwnerId, agent: AgentId, at: Millis) -> Result<()> {
        set_agent_time(self, owner, agent, AgentTime::TurnEnd, at)
    }

    fn note_mirror_refresh(&self, owner: OwnerId, agent: AgentId, at: Millis) -> Result<()> {
        set_agent_time(self, owner, agent, AgentTime::MirrorRefresh, at)
    }

    fn replace_vocabulary(
        &self,
        entries: &[VocabularyEntry],
        now: Millis,
    ) -> Result<VocabularyChange> {
        let replacement = rules::vocabulary::replacement(entries)?;
        // The new entries as columns, for one upsert of them all.
        let wanted = &replacement.wanted;
        let mut kinds = Vec::with_capacity(wanted.len());
        let mut slugs = Vec::with_capacity(wanted.len());
        let mut titles = Vec::with_capacity(wanted.len());
        let mut sources = Vec::with_capacity(wanted.len());
        let mut aliases = Vec::with_capacity(wanted.len());
        for ((kind, slug), entry) in wanted {
            kinds.push(kind.as_str());
            slugs.push(slug.as_str());
            titles.push(entry.title.as_str());
            sources.push(entry.source.as_str());
            aliases.push(rules::vocabulary::aliases_of(entry));
        }
        self.write_global(Some(VOCABULARY_LOCK), |tx| {
            let existing: HashSet<(String, String)> = tx
                .query(sql::VOCABULARY_TAGS.postgres(), &[])?
                .iter()
                .map(|row| Ok((col(row, 0)?, col(row, 1)?)))
                .collect::<PgResult<_>>()?;
            let (gone_kinds, gone_slugs): (Vec<&str>, Vec<&str>) = replacement
                .gone(&existing)
                .map(|(kind, slug)| (kind.as_str(), slug.as_str()))
                .unzip();
            if !gone_kinds.is_empty() {
                tx.execute(
                    "DELETE FROM vocabulary
                     WHERE (kind, slug) IN (SELECT * FROM unnest($1::text[], $2::text[]))",
                    &[&gone_kinds, &gone_slugs],
                )?;
            }
            if !kinds.is_empty() {
                tx.execute(
                    "INSERT INTO vocabulary (kind, slug, title, source, aliases, added_at)
                     SELECT kind, slug, title, source, aliases, $6::bigint
                     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
                          AS given (kind, slug, title, source, aliases)
                     ON CONFLICT (kind, slug) DO UPDATE
                     SET title = EXCLUDED.title, source = EXCLUDED.source, aliases = EXCLUDED.aliases",
                    &[&kinds, &slugs, &titles, &sources, &aliases, &now],
                )?;
            }
            tx.execute(
                sql::SAVE_VOCABULARY_STATE.postgres(),
                &[&replacement.digest, &(wanted.len() as i64), &now],
            )?;
            Ok(replacement.change(&existing))
        })
    }

    fn save_server_health(&self, saved_at: Millis, body: &str) -> Result<()> {
        self.write_global(None, |tx| {
            tx.execute(sql::SAVE_SERVER_HEALTH.postgres(), &[&saved_at, &body])?;
            Ok(())
        })
    }

    fn server_health(&self) -> Result<Option<(Millis, String)>> {
        self.read(|tx| {
            tx.query_opt(sql::SERVER_HEALTH.postgres(), &[])?
                .map(|row| Ok((col(&row, 0)?, col(&row, 1)?)))
                .transpose()
        })
    }

    fn issue_runner_token(
        &self,
        owner: OwnerId,
        agent: AgentId,
        token_hash: &str,
        now: Millis,
    ) -> Result<()> {
        self.write(owner, |tx| {
            let inserted = tx.execute(
                "INSERT INTO runner_tokens (owner_id, agent_id, token_hash, created_at)
                 SELECT owner_id, agent_id, $3::text, $4::bigint FROM agents
                 WHERE owner_id = $1 AND agent_id = $2",
                &[&owner.0, &agent.0, &token_hash, &now],
            )?;
            if inserted == 0 {
                return Err(StoreError::NotFound(format!("agent {}", agent.0)).into());
            }
            Ok(())
        })
    }

    fn agent_by_runner_token(&self, token_hash: &str) -> Result<Option<Agent>> {
        self.read_one(|tx| {
            tx.query_opt(sql::AGENT_OF_RUNNER_TOKEN.postgres(), &[&token_hash])?
                .as_ref()
                .map(agent_from)
                .transpose()
        })
    }

    fn revoke_runner_tokens(&self, owner: OwnerId, agent: AgentId, now: Millis) -> Result<usize> {
        self.write(owner, |tx| {
            let revoked = tx.execute(
                sql::REVOKE_RUNNER_TOKENS.postgres(),
                &[&owner.0, &agent.0, &now],
            )?;
            Ok(revoked as usize)
        })
    }

    fn issue_operator_token(&self, token_hash: &str, now: Millis) -> Result<i64> {
        self.write_global(None, |tx| {
            let row = tx.query_one(
                "INSERT INTO operator_tokens (token_hash, created_at) VALUES ($1, $2) RETURNING token_id",
                &[&token_hash, &now],
            )?;
            col(&row, 0)
        })
    }

    fn operator_token_valid(&self, token_hash: &str) -> Result<bool> {
        self.read(|tx| {
            let found = tx.query_opt(sql::OPERATOR_TOKEN_VALID.postgres(), &[&token_hash])?;
            Ok(found.is_some())
        })
    }

    fn operator_tokens(&self) -> Result<Vec<OperatorToken>> {
        self.read(|tx| {
            let rows = tx.query(sql::OPERATOR_TOKENS.postgres(), &[])?;
            all(rows, operator_token_from)
        })
    }

    fn revoke_operator_token(
        &self,
        key: OperatorTokenKey<'_>,
        now: Millis,
    ) -> Result<OperatorRevoke> {
        self.write_global(None, |tx| {
            // FOR UPDATE: a revocation by another server between the read and the write keeps its
            // own time, and this one answers that it was revoked already.
            let found = match key {
                OperatorTokenKey::Digest(digest) => tx.query_opt(
                    "SELECT token_id, created_at, revoked_at FROM operator_tokens
                     WHERE token_hash = $1 FOR UPDATE",
                    &[&digest],
                )?,
                OperatorTokenKey::Id(id) => tx.query_opt(
                    "SELECT token_id, created_at, revoked_at FROM operator_tokens
                     WHERE token_id = $1 FOR UPDATE",
                    &[&id],
                )?,
            };
            let Some(row) = found else {
                return Ok(OperatorRevoke::Unknown);
            };
            let mut token = operator_token_from(&row)?;
            if token.revoked_at.is_some() {
                return Ok(OperatorRevoke::AlreadyRevoked(token));
            }
            tx.execute(
                "UPDATE operator_tokens SET revoked_at = $2 WHERE token_id = $1",
                &[&token.id, &now],
            )?;
            token.revoked_at = Some(now);
            Ok(OperatorRevoke::Revoked(token))
        })
    }

    fn create_session(
        &self,
        owner: OwnerId,
        session_hash: &str,
        csrf_token: &str,
        now: Millis,
        expires_at: Millis,
    ) -> Result<()> {
        self.write(owner, |tx| {
            // Expired sessions are swept whenever a new one starts.
            tx.execute(
                sql::DROP_EXPIRED_SESSIONS.postgres(),
                &[&owner.0, &now],
            )?;
            let inserted = tx.execute(
                "INSERT INTO dashboard_sessions (owner_id, session_hash, csrf_token, created_at, expires_at)
                 SELECT owner_id, $2::text, $3::text, $4::bigint, $5::bigint FROM owners WHERE owner_id = $1",
                &[&owner.0, &session_hash, &csrf_token, &now, &expires_at],
            )?;
            if inserted == 0 {
                return Err(StoreError::NotFound(format!("owner {}", owner.0)).into());
            }
            Ok(())
        })
    }

    fn session(&self, session_hash: &str, now: Millis) -> Result<Option<Session>> {
        self.read(|tx| {
            tx.query_opt(sql::LIVE_SESSION.postgres(), &[&session_hash, &now])?
                .map(|row| {
                    Ok(Session {
                        owner: OwnerId(col(&row, 0)?),
                        csrf_token: col(&row, 1)?,
                        expires_at: col(&row, 2)?,
                    })
                })
                .transpose()
        })
    }

    fn end_session(&self, owner: OwnerId, session_hash: &str) -> Result<()> {
        self.write(owner, |tx| {
            tx.execute(sql::END_SESSION.postgres(), &[&owner.0, &session_hash])?;
            Ok(())
        })
    }

    fn wealth_history(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<WealthPoint>> {
        self.read(|tx| {
            tx.query(
                "SELECT hour, coins, reported_at, total_xp, total_level FROM avatar_wealth
                 WHERE owner_id = $1 AND agent_id = $2 AND hour >= $3::bigint
                 ORDER BY hour",
                &[&owner.0, &agent.0, &wealth_since(since)],
            )?
            .iter()
            .map(|row| {
                Ok(WealthPoint {
                    hour: col::<i64>(row, 0)?.saturating_mul(1000),
                    coins: col(row, 1)?,
                    reported_at: col(row, 2)?,
                    total_xp: col(row, 3)?,
                    total_level: col(row, 4)?,
                })
            })
            .collect()
        })
    }

    fn delete_agent(&self, owner: OwnerId, agent: AgentId) -> Result<DeletedAgent> {
        self.write(owner, |tx| rules::family::delete_agent(tx, owner, agent))
    }
}
