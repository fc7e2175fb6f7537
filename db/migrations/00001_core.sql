-- Core schema of the Kimi appliance. Times are unix seconds (INTEGER) unless
-- the column name ends in _ms (unix milliseconds). Never store Go time strings.
-- Every core table and index is named kimi_<name>: the prefix is reserved
-- (store.ReservedTablePrefix), so no module table (always <module>_<table>)
-- can collide with one.

-- +goose Up
-- secret = 1 marks a value that must not leave the server in a backup
-- without secrets (an API key, a token): kimi backup --without-secrets
-- deletes those rows from the copy.
CREATE TABLE kimi_settings (
    key        TEXT PRIMARY KEY NOT NULL,
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    secret     INTEGER NOT NULL DEFAULT 0 CHECK (secret IN (0, 1))
) STRICT;

CREATE TABLE kimi_audit_log (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms  INTEGER NOT NULL,
    actor  TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL DEFAULT '',
    detail TEXT NOT NULL DEFAULT '',
    ip     TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX kimi_audit_log_action ON kimi_audit_log (action, id);
-- The audit filter matches actors case-insensitively (actor = ? COLLATE
-- NOCASE); only a NOCASE index can serve that comparison.
CREATE INDEX kimi_audit_log_actor ON kimi_audit_log (actor COLLATE NOCASE, id);

CREATE TABLE kimi_admins (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    username            TEXT NOT NULL UNIQUE COLLATE NOCASE,
    password_hash       TEXT NOT NULL,
    created_at          INTEGER NOT NULL,
    password_changed_at INTEGER NOT NULL
) STRICT;

CREATE TABLE kimi_sessions (
    id           TEXT PRIMARY KEY NOT NULL,
    secret_hash  BLOB NOT NULL,
    admin_id     INTEGER NOT NULL REFERENCES kimi_admins (id) ON DELETE CASCADE,
    csrf_token   TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    ip           TEXT NOT NULL DEFAULT '',
    user_agent   TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX kimi_sessions_admin ON kimi_sessions (admin_id);
CREATE INDEX kimi_sessions_expires ON kimi_sessions (expires_at);

CREATE TABLE kimi_setup_tokens (
    token_hash BLOB PRIMARY KEY NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;

-- +goose Down
DROP TABLE kimi_setup_tokens;
DROP TABLE kimi_sessions;
DROP TABLE kimi_admins;
DROP TABLE kimi_audit_log;
DROP TABLE kimi_settings;
