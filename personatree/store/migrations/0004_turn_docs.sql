-- personatree SQLite schema, version 4: the lexical documents of a user's turns.
-- Derived data, not memory: what recall's turn index holds for one turn (its tokens,
-- log position and which of its leaves state a disposition), computed from the log and
-- the turn's leaves. Kept so that a new process does not re-read and re-tokenize every
-- message of a user before its first recall. Each row carries a digest of everything
-- it was computed from; a row whose digest no longer matches is recomputed, never
-- used. Not exported, not checksummed, not copied: it is rebuilt on first use. Rows of
-- an observation go with it (delete_observation) and with the user (delete_user).

CREATE TABLE turn_docs (
    user_id  TEXT NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
    turn     TEXT NOT NULL,
    digest   TEXT NOT NULL,
    doc      TEXT NOT NULL,
    PRIMARY KEY (user_id, turn)
);
