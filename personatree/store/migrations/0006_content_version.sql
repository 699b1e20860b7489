-- personatree SQLite schema, version 6: the content version of each user.
-- The version moves with every commit, recall's access statistics included (their
-- write-behind flushes keep concurrent writers honest through it). What is kept of
-- a tree's content elsewhere, such as a shared hot tier in Redis, is keyed by the
-- content version instead: the version of the last commit that was not only
-- recall statistics, so a flush of recall counts does not make those copies stale.

ALTER TABLE users ADD COLUMN content_version INTEGER NOT NULL DEFAULT 0 CHECK (content_version >= 0);

UPDATE users SET content_version = version;
