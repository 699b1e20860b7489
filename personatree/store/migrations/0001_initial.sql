-- personatree SQLite schema, version 1.
-- One file holds many users; every user-owned row is keyed by user_id first so that a
-- user's rows are contiguous in the indexes (fast per-user loads, cheap deletes).
-- Datetimes are ISO-8601 UTC text with microseconds; JSON columns are UTF-8 text.

CREATE TABLE schema_version (
    version     INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    applied_at  TEXT NOT NULL
);

-- One row per user with stored data: the optimistic-concurrency version and the
-- counters that hand out log positions (kept here so positions are never reused).
CREATE TABLE users (
    user_id     TEXT PRIMARY KEY,
    version     INTEGER NOT NULL DEFAULT 0 CHECK (version >= 0),
    obs_seq     INTEGER NOT NULL DEFAULT 0,
    event_seq   INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

-- The append-only verbatim log (never updated; see the trigger below).
CREATE TABLE observations (
    user_id     TEXT NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
    id          TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    session_id  TEXT NOT NULL,
    at          TEXT NOT NULL,
    messages    TEXT NOT NULL,
    metadata    TEXT NOT NULL,
    PRIMARY KEY (user_id, id),
    UNIQUE (user_id, seq)
);

CREATE TRIGGER observations_append_only
BEFORE UPDATE ON observations
BEGIN
    SELECT RAISE(ABORT, 'observations are append-only');
END;

-- Nodes are a rowid table on purpose: an upsert keeps the rowid, so ORDER BY rowid
-- returns nodes in first-insertion order (deterministic replays and rebuilds).
CREATE TABLE nodes (
    user_id      TEXT NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
    id           TEXT NOT NULL,
    level        TEXT NOT NULL CHECK (level IN ('leaf', 'mid', 'root')),
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

CREATE INDEX nodes_user_level ON nodes (user_id, level);

-- At most one edge per (src, dst); both ends must be nodes of the same user, and
-- deleting a node deletes its incident edges.
CREATE TABLE edges (
    user_id  TEXT NOT NULL,
    src      TEXT NOT NULL,
    dst      TEXT NOT NULL,
    kind     TEXT NOT NULL CHECK (kind IN ('support', 'conflict')),
    psi      REAL NOT NULL,
    weight   REAL NOT NULL,
    reason   TEXT NOT NULL,
    at       TEXT NOT NULL,
    PRIMARY KEY (user_id, src, dst),
    FOREIGN KEY (user_id, src) REFERENCES nodes (user_id, id) ON DELETE CASCADE,
    FOREIGN KEY (user_id, dst) REFERENCES nodes (user_id, id) ON DELETE CASCADE
);

CREATE INDEX edges_user_dst ON edges (user_id, dst);

CREATE TABLE journal (
    user_id  TEXT NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
    seq      INTEGER NOT NULL,
    kind     TEXT NOT NULL,
    payload  TEXT NOT NULL,
    at       TEXT NOT NULL,
    PRIMARY KEY (user_id, seq)
);

-- Store-wide settings and watermarks.
CREATE TABLE meta (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);

-- Caches (LLM responses, watermarks). user_id '' means "not scoped to a user"; rows
-- scoped to a user are removed by delete_user. No foreign key: a cache row may exist
-- before the user has any other data.
CREATE TABLE cache (
    user_id     TEXT NOT NULL DEFAULT '',
    namespace   TEXT NOT NULL,
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (user_id, namespace, key)
);
