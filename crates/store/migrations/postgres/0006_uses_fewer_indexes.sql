-- Every use written is a row in `uses` and an entry in each of its indexes. The only query that
-- used `uses_by_version_agent` (siblings' use of a skill, for "used by N siblings" and failures
-- in 7 days) reads all of a version's uses whichever index finds them, and finds them as well by
-- `uses_window` (owner_id, version_id, …); the index cost every recorded use an insert into a
-- b-tree keyed by version. SQLite drops it in its migration 0010.
-- Never edit this file once it has landed: add a new numbered migration instead.

DROP INDEX uses_by_version_agent;
