-- personatree PostgreSQL schema, version 5: the content version of each user (as the
-- SQLite store's migration 6). The version moves with every commit, recall's access
-- statistics included; copies of a tree's content kept elsewhere (a shared hot tier)
-- are keyed by the version of the last commit that was not only recall statistics.

ALTER TABLE users ADD COLUMN content_version bigint NOT NULL DEFAULT 0 CHECK (content_version >= 0);

UPDATE users SET content_version = version;
