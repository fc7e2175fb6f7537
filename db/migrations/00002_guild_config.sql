-- Configuration documents (app/guildcfg): the texts of guild:<id>,
-- channel:<id> and guild:<id>:<module> targets with their sha256 revisions,
-- and the history of every write. Times are unix milliseconds (_ms), as in
-- 00001. Core tables carry the reserved kimi_ prefix, as in 00001.

-- +goose Up
CREATE TABLE kimi_documents (
    target     TEXT PRIMARY KEY NOT NULL CHECK (length(target) BETWEEN 1 AND 120),
    kind       TEXT NOT NULL CHECK (kind IN ('guild', 'channel', 'guild_module')),
    content    TEXT NOT NULL CHECK (length(CAST(content AS BLOB)) <= 1000000),
    revision   TEXT NOT NULL CHECK (length(revision) = 64),
    updated_ms INTEGER NOT NULL,
    updated_by TEXT NOT NULL
) STRICT;

CREATE TABLE kimi_revisions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    target          TEXT NOT NULL CHECK (length(target) BETWEEN 1 AND 120),
    at_ms           INTEGER NOT NULL,
    actor_kind      TEXT NOT NULL CHECK (actor_kind IN ('admin', 'proposal', 'cli')),
    actor           TEXT NOT NULL CHECK (length(actor) BETWEEN 1 AND 200),
    action          TEXT NOT NULL CHECK (action IN ('save', 'revert')),
    reverted_from   INTEGER REFERENCES kimi_revisions (id),
    before_revision TEXT NOT NULL CHECK (length(before_revision) = 64),
    after_revision  TEXT NOT NULL CHECK (length(after_revision) = 64),
    content         TEXT NOT NULL CHECK (length(CAST(content AS BLOB)) <= 1000000),
    CHECK ((action = 'revert') = (reverted_from IS NOT NULL))
) STRICT;
CREATE INDEX kimi_revisions_target ON kimi_revisions (target, id);

-- +goose Down
DROP TABLE kimi_revisions;
DROP TABLE kimi_documents;
