-- The server: runner tokens, the operator's tokens, dashboard sessions and each avatar's latest
-- reported state. Secrets the server issues are kept only as their SHA-256 digests.

-- A runner is started for one avatar with a token the server issued for it; the server takes the
-- avatar, and from it the owner, from the token.
CREATE TABLE runner_tokens (
    token_id     INTEGER PRIMARY KEY,
    owner_id     INTEGER NOT NULL REFERENCES owners (owner_id),
    agent_id     INTEGER NOT NULL REFERENCES agents (agent_id) ON DELETE CASCADE,
    token_hash   TEXT    NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    revoked_at   INTEGER
);
CREATE INDEX runner_tokens_by_agent ON runner_tokens (owner_id, agent_id);

-- The operator's console reads every family; its tokens belong to no owner (like the
-- vocabulary, this is not family data).
CREATE TABLE operator_tokens (
    token_id     INTEGER PRIMARY KEY,
    token_hash   TEXT    NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    revoked_at   INTEGER
);

-- An owner's dashboard login. The cookie holds the session secret; the CSRF token is sent with
-- every form.
CREATE TABLE dashboard_sessions (
    session_id   INTEGER PRIMARY KEY,
    owner_id     INTEGER NOT NULL REFERENCES owners (owner_id),
    session_hash TEXT    NOT NULL UNIQUE,
    csrf_token   TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
);

-- The latest game state a runner reported for its avatar (levels, quests, wealth, gear, bank),
-- as JSON: the dashboard shows it next to the avatar's scripts.
CREATE TABLE avatar_states (
    owner_id     INTEGER NOT NULL REFERENCES owners (owner_id),
    agent_id     INTEGER NOT NULL PRIMARY KEY REFERENCES agents (agent_id) ON DELETE CASCADE,
    state        TEXT    NOT NULL,
    reported_at  INTEGER NOT NULL
);
