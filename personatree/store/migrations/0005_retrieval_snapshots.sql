-- personatree SQLite schema, version 5: a snapshot of each user's built retrieval state.
-- Derived data, not memory: recall's lexical indexes and turn maps as built from the
-- user's tree, archive and log at one version, read in bulk by a new process instead
-- of being rebuilt node by node and turn by turn. A row is used only when its version
-- is the user's current version and its fingerprint the running code's; every commit
-- of the user deletes it (so it never outlives the data it was built from, forgotten
-- text included), and it is written only while the user is still at its version. Not
-- exported, counted, checksummed or copied: it is rebuilt on first use.

CREATE TABLE retrieval_snapshots (
    user_id      TEXT NOT NULL PRIMARY KEY REFERENCES users (user_id) ON DELETE CASCADE,
    version      INTEGER NOT NULL,
    fingerprint  TEXT NOT NULL,
    data         BLOB NOT NULL
);
