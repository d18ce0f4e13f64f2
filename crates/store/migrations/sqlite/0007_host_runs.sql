-- Calls MindRune saw but could not record as a run: a run sent to the background (MindRune
-- cannot see how it ends), or a `bun …ts` line that named no file of a registered bot. They are
-- kept so the turn report and the wrap-up can tell the agent, once, what was not counted.
-- Never edit this file once it has landed: add a new numbered migration instead.

CREATE TABLE unrecorded_calls (
    owner_id  INTEGER NOT NULL REFERENCES owners (owner_id),
    agent_id  INTEGER NOT NULL REFERENCES agents (agent_id) ON DELETE CASCADE,
    -- The event's id (a hook call's tool_use_id): the same call delivered twice is noted once.
    event_id  TEXT    NOT NULL,
    at        INTEGER NOT NULL,
    -- background | no-script
    reason    TEXT    NOT NULL,
    -- What was not counted, scrubbed: the command, or the file it named.
    detail    TEXT    NOT NULL,
    PRIMARY KEY (owner_id, agent_id, event_id)
);
CREATE INDEX unrecorded_calls_by_time ON unrecorded_calls (owner_id, agent_id, at);

-- Where an agent's family-skills/ is written, relative to its workspace (NULL: `family-skills`
-- at the workspace's root, a sandbox of its own). Several bots of one rs-sdk checkout each get
-- their own (`bots/<bot>/family-skills`), so no bot's view overwrites another's.
ALTER TABLE agents ADD COLUMN mirror TEXT;
