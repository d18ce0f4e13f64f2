-- A look (`bun sdk/cli.ts NAME`, rs-sdk's "look first") prints the avatar's whole state without
-- running any script: it is kept as an unrecorded call (reason `look`) with that output, so the
-- avatar's next run is measured against it (a bot's first run included) while it stays a use of
-- no skill. The output is NULL for every other reason, and for calls noted before this column.
-- Never edit this file once it has landed: add a new numbered migration instead.

ALTER TABLE unrecorded_calls ADD COLUMN output TEXT;
