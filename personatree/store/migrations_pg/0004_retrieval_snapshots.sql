-- personatree PostgreSQL schema, version 4: a snapshot of each user's built retrieval
-- state (derived data kept for a warm first recall; see the SQLite migration
-- 0005_retrieval_snapshots.sql for what a row holds and why it is never served stale).

CREATE TABLE retrieval_snapshots (
    user_id      text NOT NULL PRIMARY KEY REFERENCES users (user_id) ON DELETE CASCADE,
    version      bigint NOT NULL,
    fingerprint  text NOT NULL,
    data         bytea NOT NULL
);
