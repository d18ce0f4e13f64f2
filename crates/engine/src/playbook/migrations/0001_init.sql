-- The playbook ledger of one workspace. Never edit this file once landed; add 0002.

-- Every change to a skill is a card in the human's inbox.
CREATE TABLE cards (
    id              INTEGER PRIMARY KEY,
    kind            TEXT NOT NULL CHECK (kind IN ('create', 'revise', 'revert', 'retire')),
    skill           TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('waiting', 'applied', 'rejected', 'refused')),
    filed_by        TEXT NOT NULL,
    filed_at        TEXT NOT NULL,
    proposal        TEXT,
    fingerprint     TEXT,
    base_version    INTEGER,
    restore_version INTEGER,
    report_id       INTEGER REFERENCES usage (id),
    why             TEXT,
    answered_at     TEXT,
    answered_by     TEXT,
    reason          TEXT,
    outcome         TEXT
);
CREATE INDEX cards_by_state ON cards (state, kind, skill);
-- At most one revision per report, whatever process files it.
CREATE UNIQUE INDEX one_revision_per_report ON cards (report_id) WHERE kind = 'revise';

-- The usage log: one line per read of a skill (whether it went through) and one per
-- correction the assistant reported against a revision.
CREATE TABLE usage (
    id       INTEGER PRIMARY KEY,
    at       TEXT NOT NULL,
    skill    TEXT NOT NULL,
    revision INTEGER,
    kind     TEXT NOT NULL CHECK (kind IN ('read', 'correction')),
    ok       INTEGER NOT NULL,
    step     INTEGER,
    turn     TEXT,
    -- A correction: what the fixer concluded when it stopped without a revision.
    fixer_note TEXT
);
CREATE INDEX usage_by_skill ON usage (skill, revision, kind);

-- A second success of a task accepted as done, on the same steps as an existing skill.
CREATE TABLE evidence (
    id    INTEGER PRIMARY KEY,
    at    TEXT NOT NULL,
    skill TEXT NOT NULL,
    text  TEXT NOT NULL
);

-- Suggestions for a skill (the observer's, and the "what carries over" rule's), until the
-- assistant has been shown them.
CREATE TABLE suggestions (
    id     INTEGER PRIMARY KEY,
    at     TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('observer', 'carry-over')),
    text   TEXT NOT NULL,
    shown  INTEGER NOT NULL DEFAULT 0
);

-- The search index over the live skills' files, kept in step with their fingerprints.
CREATE VIRTUAL TABLE skill_search USING fts5 (
    name, trigger, use_when, not_when, steps, body,
    tokenize = 'porter unicode61'
);
CREATE TABLE skill_indexed (
    name        TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    search_row  INTEGER NOT NULL
);
