-- MindRune's library on SQLite, first schema.
-- Never edit this file once it has landed: add a new numbered migration instead.
-- Every table carries owner_id, so a family never spans shards and every query can filter by it.

CREATE TABLE owners (
    owner_id      INTEGER PRIMARY KEY,
    name          TEXT    NOT NULL UNIQUE,
    api_key       TEXT    NOT NULL,
    eager_sharing INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL
);

CREATE TABLE agents (
    agent_id   INTEGER PRIMARY KEY,
    owner_id   INTEGER NOT NULL REFERENCES owners (owner_id),
    name       TEXT    NOT NULL UNIQUE,
    workspace  TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX agents_by_owner ON agents (owner_id, name);

CREATE TABLE skills (
    skill_id           INTEGER PRIMARY KEY,
    owner_id           INTEGER NOT NULL REFERENCES owners (owner_id),
    agent_id           INTEGER REFERENCES agents (agent_id),
    agent_name         TEXT    NOT NULL,
    name               TEXT    NOT NULL,
    path               TEXT    NOT NULL,
    kind               TEXT    NOT NULL DEFAULT 'script',
    current_version_id INTEGER,
    tags               TEXT    NOT NULL DEFAULT '',
    created_at         INTEGER NOT NULL,
    deleted_at         INTEGER,
    UNIQUE (owner_id, agent_name, path)
);

CREATE TABLE versions (
    version_id        INTEGER PRIMARY KEY,
    owner_id          INTEGER NOT NULL REFERENCES owners (owner_id),
    skill_id          INTEGER NOT NULL REFERENCES skills (skill_id),
    number            INTEGER NOT NULL,
    digest            TEXT    NOT NULL,
    code              TEXT    NOT NULL,
    parent_version_id INTEGER REFERENCES versions (version_id),
    lineage           TEXT,
    inherited         REAL,
    uses              INTEGER NOT NULL DEFAULT 0,
    ok                INTEGER NOT NULL DEFAULT 0,
    score             REAL    NOT NULL DEFAULT 0,
    breakdown         TEXT,
    measure_key       TEXT    NOT NULL DEFAULT 'none',
    rate_per_minute   REAL    NOT NULL DEFAULT 0,
    peer_rate         REAL,
    peer_checked_uses INTEGER,
    created_at        INTEGER NOT NULL,
    last_used_at      INTEGER,
    UNIQUE (skill_id, digest),
    UNIQUE (skill_id, number)
);
CREATE INDEX versions_by_digest ON versions (owner_id, digest);

-- The skill's tags one per row, for finding peers; skills.tags holds the same list, newline-joined,
-- so recording a use reads them with the version row.
CREATE TABLE skill_tags (
    owner_id INTEGER NOT NULL REFERENCES owners (owner_id),
    skill_id INTEGER NOT NULL REFERENCES skills (skill_id),
    tag      TEXT    NOT NULL,
    PRIMARY KEY (skill_id, tag)
);
CREATE INDEX skill_tags_by_tag ON skill_tags (owner_id, tag);

CREATE TABLE uses (
    use_id        INTEGER PRIMARY KEY,
    owner_id      INTEGER NOT NULL REFERENCES owners (owner_id),
    version_id    INTEGER NOT NULL REFERENCES versions (version_id),
    agent_id      INTEGER REFERENCES agents (agent_id),
    at            INTEGER NOT NULL,
    ok            INTEGER NOT NULL,
    duration_ms   INTEGER NOT NULL,
    xp            TEXT,
    items         TEXT,
    goal_progress REAL    NOT NULL DEFAULT 0,
    deaths        INTEGER NOT NULL DEFAULT 0,
    stuck         INTEGER NOT NULL DEFAULT 0,
    items_lost    INTEGER NOT NULL DEFAULT 0,
    source        TEXT    NOT NULL,
    call          TEXT,
    output        TEXT,
    event_id      TEXT,
    recorded_at   INTEGER NOT NULL
);
CREATE INDEX uses_window ON uses (version_id, at DESC, use_id DESC);
CREATE UNIQUE INDEX uses_event ON uses (owner_id, event_id) WHERE event_id IS NOT NULL;

CREATE TABLE snippets (
    snippet_id   INTEGER PRIMARY KEY,
    owner_id     INTEGER NOT NULL REFERENCES owners (owner_id),
    agent_id     INTEGER REFERENCES agents (agent_id),
    digest       TEXT    NOT NULL,
    code         TEXT    NOT NULL,
    uses         INTEGER NOT NULL DEFAULT 0,
    ok           INTEGER NOT NULL DEFAULT 0,
    first_at     INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL,
    UNIQUE (owner_id, agent_id, digest)
);

CREATE TABLE snippet_uses (
    use_id        INTEGER PRIMARY KEY,
    owner_id      INTEGER NOT NULL REFERENCES owners (owner_id),
    snippet_id    INTEGER NOT NULL REFERENCES snippets (snippet_id),
    agent_id      INTEGER REFERENCES agents (agent_id),
    at            INTEGER NOT NULL,
    ok            INTEGER NOT NULL,
    duration_ms   INTEGER NOT NULL,
    xp            TEXT,
    items         TEXT,
    goal_progress REAL    NOT NULL DEFAULT 0,
    deaths        INTEGER NOT NULL DEFAULT 0,
    stuck         INTEGER NOT NULL DEFAULT 0,
    items_lost    INTEGER NOT NULL DEFAULT 0,
    output        TEXT,
    event_id      TEXT,
    recorded_at   INTEGER NOT NULL
);
CREATE INDEX snippet_uses_by_snippet ON snippet_uses (snippet_id, at DESC);
CREATE UNIQUE INDEX snippet_uses_event ON snippet_uses (owner_id, event_id) WHERE event_id IS NOT NULL;
