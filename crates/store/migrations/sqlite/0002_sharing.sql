-- Family sharing: the @skill header a script carries, which versions were shared, the family's
-- lessons (Share: lines), and a log of what became shared or stopped being shared.
-- Never edit this file once it has landed: add a new numbered migration instead.

-- The header the file had when it was last read: 'none', 'skill' (shared once proven) or
-- 'private' (@private). A skill is shared with the family while its header is 'skill', its
-- file exists (deleted_at IS NULL) and at least one of its versions was shared.
ALTER TABLE skills ADD COLUMN header        TEXT NOT NULL DEFAULT 'none';
ALTER TABLE skills ADD COLUMN goal          TEXT;
ALTER TABLE skills ADD COLUMN preconditions TEXT;
ALTER TABLE skills ADD COLUMN params        TEXT;
ALTER TABLE skills ADD COLUMN result        TEXT;
ALTER TABLE skills ADD COLUMN from_skill    TEXT;
-- Topic tags (newline-joined), from the header's words.
ALTER TABLE skills ADD COLUMN topics        TEXT NOT NULL DEFAULT '';
-- The digest of the whole file (header included) when it was last read: an unchanged file
-- needs no work at a turn boundary.
ALTER TABLE skills ADD COLUMN file_digest   TEXT;

-- Set when the version cleared the sharing bar while it was the headed file's version. Kept
-- for ever: un-sharing clears the skill's header, never this, so adding the header back shares
-- again at once.
ALTER TABLE versions ADD COLUMN shared_at INTEGER;

ALTER TABLE agents ADD COLUMN mirror_refreshed_at INTEGER;
ALTER TABLE agents ADD COLUMN last_turn_at        INTEGER;

CREATE TABLE sharing_events (
    sharing_event_id INTEGER PRIMARY KEY,
    owner_id         INTEGER NOT NULL REFERENCES owners (owner_id),
    skill_id         INTEGER NOT NULL REFERENCES skills (skill_id),
    agent_id         INTEGER REFERENCES agents (agent_id),
    version_number   INTEGER,
    kind             TEXT    NOT NULL, -- 'shared' | 'unshared'
    reason           TEXT    NOT NULL,
    at               INTEGER NOT NULL
);
CREATE INDEX sharing_events_by_agent ON sharing_events (owner_id, agent_id, at);

-- Share: lines of an agent's lab log, scrubbed. Only these lines ever leave a lab log; a line
-- deleted from the log is deleted here.
CREATE TABLE lessons (
    lesson_id     INTEGER PRIMARY KEY,
    owner_id      INTEGER NOT NULL REFERENCES owners (owner_id),
    agent_id      INTEGER NOT NULL REFERENCES agents (agent_id),
    digest        TEXT    NOT NULL,
    text          TEXT    NOT NULL,
    line          INTEGER NOT NULL,
    first_seen_at INTEGER NOT NULL,
    UNIQUE (owner_id, agent_id, digest)
);

-- Siblings' use of a skill: uses by agent, for "used by N siblings" and failures in 7 days.
CREATE INDEX uses_by_version_agent ON uses (version_id, agent_id, at);
-- A skill's versions. Every query carries owner_id; without an index that leads with it and
-- then the skill, SQLite walks all of a family's versions (by digest) for each skill.
CREATE INDEX versions_by_skill ON versions (owner_id, skill_id, number);
-- Copies of a sibling's skill are found through their first version's parent.
CREATE INDEX versions_by_parent ON versions (parent_version_id, owner_id);
