-- personatree PostgreSQL schema, version 3: the lexical documents of a user's turns
-- (derived data kept for a warm first recall; see the SQLite migration
-- 0004_turn_docs.sql for what a row holds and why it is never served stale).

CREATE TABLE turn_docs (
    user_id  text NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
    turn     text NOT NULL,
    digest   text NOT NULL,
    doc      text NOT NULL,
    PRIMARY KEY (user_id, turn)
);
