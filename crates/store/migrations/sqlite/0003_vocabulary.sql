-- The topic-tag vocabulary: every tag MindRune knows (one per rs-sdk wiki page, the LostHQ
-- pages the wiki lacks and the places of the game's world) and the names that mean it.
-- Never edit this file once it has landed: add a new numbered migration instead.
--
-- Global reference data, so no owner_id, unlike every other table: the vocabulary holds no
-- family's data, only the names of the game's pages, and every family must map the same words
-- to the same tags (a lesson tagged quest:restless-ghost means one quest for everyone). On a
-- sharded PostgreSQL it is a reference table (Citus `create_reference_table`), copied to every
-- node, so joining it with any family's rows stays local. `mindrune tags build` replaces it as
-- a whole; nothing else writes it.
CREATE TABLE vocabulary (
    kind     TEXT    NOT NULL, -- quest | skill | item | npc | shop | place
    slug     TEXT    NOT NULL,
    title    TEXT    NOT NULL,
    source   TEXT    NOT NULL, -- wiki | losthq | places
    -- Other names (spellings, nicknames kept with the page), newline-joined.
    aliases  TEXT    NOT NULL DEFAULT '',
    -- When the tag first appeared; a rebuild that keeps it keeps this.
    added_at INTEGER NOT NULL,
    PRIMARY KEY (kind, slug)
) WITHOUT ROWID;

-- One row: the digest of the whole vocabulary as last written, so a process that compiled it
-- once can tell with one read whether it is still current.
CREATE TABLE vocabulary_state (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    digest   TEXT    NOT NULL,
    entries  INTEGER NOT NULL,
    built_at INTEGER NOT NULL
);
