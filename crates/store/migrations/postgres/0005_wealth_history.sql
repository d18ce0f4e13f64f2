-- The avatar's wealth over time, for the chart on its dashboard page: one point per avatar per
-- hour (`hour` is the hour's start in unix seconds), the hour's newest report winning. Written
-- with the state (`save_avatar_state`); points more than 90 days older than the avatar's newest
-- are dropped as new ones come, so the table stays a few thousand rows per avatar.
-- A family table: on Citus, distribute it by owner_id with the others:
--   SELECT create_distributed_table('avatar_wealth', 'owner_id', colocate_with => 'skills');
-- Never edit this file once it has landed: add a new numbered migration instead.

CREATE TABLE avatar_wealth (
    owner_id    BIGINT NOT NULL REFERENCES owners (owner_id),
    agent_id    BIGINT NOT NULL REFERENCES agents (agent_id) ON DELETE CASCADE,
    hour        BIGINT NOT NULL,
    coins       BIGINT NOT NULL,
    reported_at BIGINT NOT NULL,
    PRIMARY KEY (owner_id, agent_id, hour)
);
