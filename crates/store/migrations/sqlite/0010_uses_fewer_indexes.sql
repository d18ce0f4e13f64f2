-- Every use written is a row in `uses` and an entry in each of its indexes, and a write group
-- commits every page it touched. `uses_by_version_agent` was one of the two indexes keyed by
-- version, so under many versions it cost about a page of log per use; the only query that
-- used it (siblings' use of a skill, for "used by N siblings" and failures in 7 days) reads all
-- of a version's uses whichever index finds them, and finds them as well by `uses_window`
-- (its plan is then the same search with the same temporary b-tree for the GROUP BY).
-- Never edit this file once it has landed: add a new numbered migration instead.

DROP INDEX uses_by_version_agent;
