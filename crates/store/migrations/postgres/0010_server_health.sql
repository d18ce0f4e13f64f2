-- The operator console's health counters (events and errors per minute over the last hour,
-- refused requests by reason and path, each runner's last contact), saved by `mindrune serve`
-- every few seconds and on shutdown, so a restart does not wipe what the operator was looking
-- at. One row; the body is the server's own JSON, opaque to the store.
CREATE TABLE server_health (
    id       BIGINT PRIMARY KEY CHECK (id = 1),
    saved_at BIGINT  NOT NULL,
    body     TEXT    NOT NULL
);
