-- Owner and agent names that differ only in case are one name: `Ada` beside `ada` is refused.
-- Names are ASCII (letters, digits, `-`, `_`, `.`), so lower() folds every case there is. The
-- exact-name UNIQUE constraints stay: look-ups by name are exact and use them.
CREATE UNIQUE INDEX owners_name_nocase ON owners (lower(name));
CREATE UNIQUE INDEX agents_name_nocase ON agents (lower(name));
