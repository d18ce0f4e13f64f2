-- The avatar's wealth over time, for the chart on its dashboard page: one point per avatar per
-- hour (`hour` is the hour's start in unix seconds), the hour's newest report winning. Written
-- with the state (`save_avatar_state`); points more than 90 days older than the avatar's newest
-- are dropped as new ones come, so the table stays a few thousand rows per avatar.
-- Never edit this file once it has landed: add a new numbered migration instead.

CREATE TABLE avatar_wealth (
    owner_id     INTEGER NOT NULL REFERENCES owners (owner_id),
    agent_id     INTEGER NOT NULL REFERENCES agents (agent_id) ON DELETE CASCADE,
    hour         INTEGER NOT NULL,
    coins        INTEGER NOT NULL,
    reported_at  INTEGER NOT NULL,
    PRIMARY KEY (owner_id, agent_id, hour)
);
