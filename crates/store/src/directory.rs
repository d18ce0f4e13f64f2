//! The library's directory: owners and their keys, agents, runner and operator tokens, the
//! dashboard's sessions, each avatar's game state history and times (turn ends, wrap-ups,
//! mirror refreshes), the topic-tag vocabulary and the server's health counters.

use crate::{
    Agent, AgentId, DeletedAgent, Millis, OperatorRevoke, OperatorToken, OperatorTokenKey, Owner,
    OwnerId, Result, Session, VocabularyChange, VocabularyEntry, WealthPoint,
};

/// Who and what the library knows, and how they sign in.
pub trait Directory {
    /// Creates an owner account whose key has the digest `key_digest`
    /// (`mindrune_core::secret_digest` of the key); anything else is refused, so the
    /// key itself is never stored.
    fn create_owner(&self, name: &str, key_digest: &str, now: Millis) -> Result<Owner>;
    /// Replaces an owner's key (a lost key): from now on only the key with the digest
    /// `key_digest` opens the dashboard, and the old one stops working.
    fn replace_owner_key(&self, owner: OwnerId, key_digest: &str) -> Result<()>;
    /// Identity look-up by name (the CLI's way to name an owner).
    fn owner_by_name(&self, name: &str) -> Result<Option<Owner>>;
    fn owner(&self, owner: OwnerId) -> Result<Owner>;
    /// Every owner account (for the operator's command line).
    fn owners(&self) -> Result<Vec<Owner>>;
    /// Adds an agent to an owner's family. Agent names are unique in the library, as avatar
    /// names are in the game.
    fn create_agent(
        &self,
        owner: OwnerId,
        name: &str,
        workspace: &str,
        now: Millis,
    ) -> Result<Agent>;
    fn agents(&self, owner: OwnerId) -> Result<Vec<Agent>>;
    /// Notes that an agent had a wrap-up.
    fn note_wrapup(&self, owner: OwnerId, agent: AgentId, at: Millis) -> Result<()>;
    /// Sets where an agent's `family-skills/` is written, relative to its workspace (`None`:
    /// the workspace's root).
    fn set_agent_mirror(&self, owner: OwnerId, agent: AgentId, mirror: Option<&str>) -> Result<()>;
    /// Switches eager family sharing (the lower bar) on or off for the owner's family.
    fn set_eager_sharing(&self, owner: OwnerId, eager: bool) -> Result<()>;
    /// Notes that an agent's turn ended, or that its `family-skills/` was written.
    fn note_turn_end(&self, owner: OwnerId, agent: AgentId, at: Millis) -> Result<()>;
    fn note_mirror_refresh(&self, owner: OwnerId, agent: AgentId, at: Millis) -> Result<()>;
    // The topic-tag vocabulary. Global reference data (like a Citus reference table): the names
    // of the game's pages, the same for every family and holding none of a family's data, so
    // these methods take no OwnerId.

    /// Makes the vocabulary exactly these entries, in one transaction: tags not there yet are
    /// added (re-running after an rs-sdk update adds its new pages as new tags), tags no longer
    /// given are removed, the others keep their first-seen time and take the new title,
    /// source and aliases.
    fn replace_vocabulary(
        &self,
        entries: &[VocabularyEntry],
        now: Millis,
    ) -> Result<VocabularyChange>;
    /// Keeps the server's health counters (`body`: the server's JSON, opaque here), replacing
    /// what was kept, so a restarted server shows what it counted before.
    fn save_server_health(&self, saved_at: Millis, body: &str) -> Result<()>;
    /// The server's health counters as last kept, with when: `None` before the first save.
    fn server_health(&self) -> Result<Option<(Millis, String)>>;
    // The server's identities. Only digests of the secrets it issues are stored; the look-ups
    // by digest are identity look-ups (they find the owner), like `agent_by_name`.

    /// Keeps a runner token (its digest) issued for one avatar.
    fn issue_runner_token(
        &self,
        owner: OwnerId,
        agent: AgentId,
        token_hash: &str,
        now: Millis,
    ) -> Result<()>;
    /// The avatar a runner token was issued for; `None` when unknown or revoked.
    fn agent_by_runner_token(&self, token_hash: &str) -> Result<Option<Agent>>;
    /// Revokes every runner token of an avatar; returns how many were live.
    fn revoke_runner_tokens(&self, owner: OwnerId, agent: AgentId, now: Millis) -> Result<usize>;
    /// Keeps an operator token (its digest): it reads the console and `/metrics`, every
    /// family, read-only. Returns its id, by which it can be listed and revoked.
    fn issue_operator_token(&self, token_hash: &str, now: Millis) -> Result<i64>;
    /// Whether an operator token is known and not revoked.
    fn operator_token_valid(&self, token_hash: &str) -> Result<bool>;
    /// Every operator token, oldest first, revoked ones too.
    fn operator_tokens(&self) -> Result<Vec<OperatorToken>>;
    /// Revokes one operator token, by its digest or its id.
    fn revoke_operator_token(
        &self,
        key: OperatorTokenKey<'_>,
        now: Millis,
    ) -> Result<OperatorRevoke>;
    /// Starts a dashboard session for an owner.
    fn create_session(
        &self,
        owner: OwnerId,
        session_hash: &str,
        csrf_token: &str,
        now: Millis,
        expires_at: Millis,
    ) -> Result<()>;
    /// A live session by its secret's digest; expired sessions are not found.
    fn session(&self, session_hash: &str, now: Millis) -> Result<Option<Session>>;
    /// Ends a session (logout).
    fn end_session(&self, owner: OwnerId, session_hash: &str) -> Result<()>;
    /// The avatar's wealth, one point per hour, of the hours starting at or after `since`;
    /// oldest first.
    fn wealth_history(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<WealthPoint>>;
    /// Deletes an agent: its private scripts (with their history), snippets and lessons go;
    /// its shared skills stay with the family, no longer linked to it.
    fn delete_agent(&self, owner: OwnerId, agent: AgentId) -> Result<DeletedAgent>;
}
