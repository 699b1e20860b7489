-- personatree PostgreSQL schema, version 2: the archive of leaves that left the tree
-- (see the SQLite migration 0003_archive.sql for why). LIKE copies the nodes table's
-- columns, including the embedding column in whichever type migration 1 chose
-- (pgvector or real[]), its checks and its first-insertion order (pos).

CREATE TABLE archive (
    LIKE nodes INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    PRIMARY KEY (user_id, id),
    FOREIGN KEY (user_id) REFERENCES users (user_id) ON DELETE CASCADE,
    CHECK (level = 'leaf')
);

CREATE INDEX archive_user_pos ON archive (user_id, pos);
