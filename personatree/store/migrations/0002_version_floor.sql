-- personatree SQLite schema, version 2: versions never repeat for a user id.
-- delete_user drops the user's row, so a re-created user used to restart at version 1
-- and a cache in another process holding "version 1" of the old data could not tell
-- the difference. The floor is the highest version any deleted user ever had; a user
-- row created later starts above it. One store-wide number: no trace of the deleted
-- user id is kept.

CREATE TABLE store_state (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    version_floor  INTEGER NOT NULL DEFAULT 0 CHECK (version_floor >= 0)
);

INSERT INTO store_state (id, version_floor) VALUES (1, 0);
