-- personatree SQLite schema, version 3: the archive of leaves that left the tree.
-- Consolidation bounds the tree (at most K leaves per pattern, stale orphans dropped),
-- not the memory: a leaf it removes moves here, with its embedding, and recall still
-- searches it as verbatim evidence. Only forget, delete_observation and delete_user
-- remove rows from here. The columns are the nodes table's, so one codec reads both.

CREATE TABLE archive (
    user_id      TEXT NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
    id           TEXT NOT NULL,
    level        TEXT NOT NULL CHECK (level = 'leaf'),
    schema_type  TEXT NOT NULL,
    content      TEXT NOT NULL,
    attributes   TEXT NOT NULL,
    t_first      TEXT NOT NULL,
    t_last       TEXT NOT NULL,
    logit        REAL NOT NULL,
    n_support    INTEGER NOT NULL,
    n_conflict   INTEGER NOT NULL,
    provenance   TEXT NOT NULL,
    recall_count INTEGER NOT NULL DEFAULT 0,
    t_access     TEXT,
    embedding    BLOB,
    dim          INTEGER,
    PRIMARY KEY (user_id, id),
    CHECK ((embedding IS NULL AND dim IS NULL) OR length(embedding) = 4 * dim)
);
