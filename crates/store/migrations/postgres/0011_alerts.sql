-- Alerts that reach the owner (issue 44 item 3): one row per alert, its id stable (the owner,
-- the kind, the subject and what begins it, e.g. a failing streak's first failed run), so the
-- same streak never opens twice; `resolved_at` is set when its attention item is gone.
-- `alert_deliveries` is the outbox: one row per alert, event ('open' or 'resolve') and webhook,
-- tried until the webhook answers 2xx, with backoff kept here so it survives a restart.
-- Never edit this file once it has landed: add a new numbered migration instead.

CREATE TABLE alerts (
    owner_id    BIGINT NOT NULL REFERENCES owners (owner_id),
    alert_id    TEXT NOT NULL,
    kind        TEXT NOT NULL,
    subject     TEXT NOT NULL,
    body        TEXT NOT NULL,
    opened_at   BIGINT NOT NULL,
    resolved_at BIGINT,
    PRIMARY KEY (owner_id, alert_id)
);

CREATE INDEX alerts_open ON alerts (owner_id) WHERE resolved_at IS NULL;

CREATE TABLE alert_deliveries (
    owner_id        BIGINT NOT NULL,
    alert_id        TEXT NOT NULL,
    event           TEXT NOT NULL CHECK (event IN ('open', 'resolve')),
    webhook         TEXT NOT NULL,
    format          TEXT NOT NULL,
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_status     BIGINT,
    last_error      TEXT,
    delivered_at    BIGINT,
    PRIMARY KEY (owner_id, alert_id, event, webhook),
    FOREIGN KEY (owner_id, alert_id) REFERENCES alerts (owner_id, alert_id)
);

CREATE INDEX alert_deliveries_due ON alert_deliveries (owner_id, next_attempt_at)
    WHERE delivered_at IS NULL;
