-- Wrap-ups: when an agent last had one, and at which run count each repeated snippet (or group
-- of near-repeats) was last suggested as a file, so a suggestion comes again only at 6, 12, …
-- Never edit this file once it has landed: add a new numbered migration instead.

ALTER TABLE agents ADD COLUMN last_wrapup_at INTEGER;

CREATE TABLE snippet_suggestions (
    owner_id       INTEGER NOT NULL REFERENCES owners (owner_id),
    agent_id       INTEGER NOT NULL REFERENCES agents (agent_id),
    -- The exact snippet digest, or the near-repeat shape, the suggestion was about.
    group_key      TEXT    NOT NULL,
    suggested_at   INTEGER NOT NULL,
    -- Successful runs counted when it was last suggested.
    suggested_runs INTEGER NOT NULL,
    PRIMARY KEY (owner_id, agent_id, group_key)
);
