-- Why a run failed (the error line, and the game message that explains it when the run showed
-- one), kept with the use so `skill show` and the dashboard can say it. NULL for runs that did
-- not fail and for runs recorded before this column existed.
-- Never edit this file once it has landed: add a new numbered migration instead.

ALTER TABLE uses ADD COLUMN failure TEXT;
ALTER TABLE snippet_uses ADD COLUMN failure TEXT;

-- The avatar's previous run is read (its output) to measure the next one against it.
CREATE INDEX uses_by_agent_time ON uses (agent_id, at DESC, use_id DESC);
CREATE INDEX snippet_uses_by_agent_time ON snippet_uses (agent_id, at DESC, use_id DESC);
