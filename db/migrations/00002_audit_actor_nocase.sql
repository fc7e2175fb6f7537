-- The audit-log filter matches actors case-insensitively
-- (actor = ? COLLATE NOCASE). The BINARY index of 00001 cannot serve that
-- comparison, so every actor filter scanned the whole log; this index can.

-- +goose Up
DROP INDEX audit_log_actor;
CREATE INDEX audit_log_actor ON audit_log (actor COLLATE NOCASE, id);

-- +goose Down
DROP INDEX audit_log_actor;
CREATE INDEX audit_log_actor ON audit_log (actor, id);
