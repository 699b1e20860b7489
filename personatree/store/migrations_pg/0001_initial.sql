-- personatree PostgreSQL schema, version 1 (the same data model as the SQLite store).
--
-- Why the column types look like they do:
-- * Domain times (observation.at, t_first, t_last, t_access, edge.at, journal.at) are
--   the codec's fixed-width ISO-8601 UTC text, as in SQLite: the round trip is exact to
--   the microsecond whatever the session TimeZone, text order is time order, and the
--   checksums of a copied store equal the source's.
-- * JSON columns are text, not jsonb: jsonb reorders keys, rejects \u0000 and rewrites
--   numbers, while the store must give back exactly what it was given.
-- * Text cannot hold NUL in PostgreSQL; the store escapes it reversibly in id and
--   content columns (see personatree.store.postgres).
-- * Every user-owned row is keyed by user_id first: one user's rows are contiguous in
--   the primary-key indexes, so loads and deletes touch only that user.
-- * The store runs this script inside one transaction, after
--   SET LOCAL personatree.embedding_type = 'vector' | 'real[]'.

CREATE TABLE schema_version (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);

-- The optimistic-concurrency version and the counters that hand out log positions
-- (kept here so that positions are never reused).
CREATE TABLE users (
    user_id     text PRIMARY KEY,
    version     bigint NOT NULL DEFAULT 0 CHECK (version >= 0),
    obs_seq     bigint NOT NULL DEFAULT 0,
    event_seq   bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- One row: the highest version any deleted user had. A user row created later starts
-- above it, so a (user, version) pair never names two different states.
CREATE TABLE store_state (
    id             integer PRIMARY KEY CHECK (id = 1),
    version_floor  bigint NOT NULL DEFAULT 0 CHECK (version_floor >= 0)
);
INSERT INTO store_state (id, version_floor) VALUES (1, 0);

-- The append-only verbatim log.
CREATE TABLE observations (
    user_id     text NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
    id          text NOT NULL,
    seq         bigint NOT NULL,
    session_id  text NOT NULL,
    at          text NOT NULL,
    messages    text NOT NULL,
    metadata    text NOT NULL,
    PRIMARY KEY (user_id, id),
    UNIQUE (user_id, seq)
);

CREATE FUNCTION personatree_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'observations are append-only';
END
$$;

CREATE TRIGGER observations_append_only
BEFORE UPDATE ON observations
FOR EACH ROW EXECUTE FUNCTION personatree_append_only();

-- pos is the first-insertion order: an upsert (ON CONFLICT DO UPDATE) keeps it, so
-- ORDER BY pos returns nodes as SQLite's ORDER BY rowid does.
CREATE TABLE nodes (
    pos          bigserial NOT NULL,
    user_id      text NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
    id           text NOT NULL,
    level        text NOT NULL CHECK (level IN ('leaf', 'mid', 'root')),
    schema_type  text NOT NULL,
    content      text NOT NULL,
    attributes   text NOT NULL,
    t_first      text NOT NULL,
    t_last       text NOT NULL,
    logit        double precision NOT NULL,
    n_support    bigint NOT NULL,
    n_conflict   bigint NOT NULL,
    provenance   text NOT NULL,
    recall_count bigint NOT NULL DEFAULT 0,
    t_access     text,
    dim          integer CHECK (dim > 0),
    PRIMARY KEY (user_id, id)
);

CREATE INDEX nodes_user_pos ON nodes (user_id, pos);

-- The embedding: a pgvector column (no fixed dimension: one store may hold several
-- models) when the extension is installed, else a float4 array. Search is exact numpy
-- over a per-user matrix in the engine, so no ANN index: under a user filter a shared
-- HNSW index loses results, and per-user trees are small.
DO $$
DECLARE
    wanted text := coalesce(nullif(current_setting('personatree.embedding_type', true), ''), 'auto');
    ext_schema name;
BEGIN
    SELECT n.nspname INTO ext_schema
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'vector';
    IF wanted = 'vector' AND ext_schema IS NULL THEN
        RAISE EXCEPTION 'the vector extension is not installed';
    END IF;
    IF ext_schema IS NOT NULL AND wanted <> 'real[]' THEN
        EXECUTE format('ALTER TABLE nodes ADD COLUMN embedding %I.vector', ext_schema);
        EXECUTE format(
            'ALTER TABLE nodes ADD CONSTRAINT nodes_embedding_dim CHECK '
            '((embedding IS NULL AND dim IS NULL) OR %I.vector_dims(embedding) = dim)', ext_schema);
    ELSE
        ALTER TABLE nodes ADD COLUMN embedding real[];
        ALTER TABLE nodes ADD CONSTRAINT nodes_embedding_dim CHECK
            ((embedding IS NULL AND dim IS NULL) OR (array_ndims(embedding) = 1 AND cardinality(embedding) = dim));
    END IF;
END
$$;

-- At most one edge per (src, dst); both ends are nodes of the same user; deleting a
-- node deletes its incident edges. pos keeps the insertion order (as SQLite's rowid).
CREATE TABLE edges (
    pos      bigserial NOT NULL,
    user_id  text NOT NULL,
    src      text NOT NULL,
    dst      text NOT NULL,
    kind     text NOT NULL CHECK (kind IN ('support', 'conflict')),
    psi      double precision NOT NULL,
    weight   double precision NOT NULL,
    reason   text NOT NULL,
    at       text NOT NULL,
    PRIMARY KEY (user_id, src, dst),
    FOREIGN KEY (user_id, src) REFERENCES nodes (user_id, id) ON DELETE CASCADE,
    FOREIGN KEY (user_id, dst) REFERENCES nodes (user_id, id) ON DELETE CASCADE
);

CREATE INDEX edges_user_pos ON edges (user_id, pos);
CREATE INDEX edges_user_dst ON edges (user_id, dst);

CREATE TABLE journal (
    user_id  text NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
    seq      bigint NOT NULL,
    kind     text NOT NULL,
    payload  text NOT NULL,
    at       text NOT NULL,
    PRIMARY KEY (user_id, seq)
);

CREATE TABLE meta (
    key    text PRIMARY KEY,
    value  text NOT NULL
);

-- user_id '' means "not scoped to a user"; scoped rows go with delete_user. No
-- foreign key: a cache row may exist before the user has other data.
CREATE TABLE cache (
    user_id     text NOT NULL DEFAULT '',
    namespace   text NOT NULL,
    key         text NOT NULL,
    value       text NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, namespace, key)
);
