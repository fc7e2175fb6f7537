-- What /assistant/usage needs beside the roll-up of 00012 (issue 26 item 5).
--
-- kimi_assistant_usage_version is one row whose version goes up whenever
-- a row the usage page reads changes: the roll-up and its error counts
-- (written, pruned), a turn's end or removal, a tool call's insert or
-- removal. The page keeps its last report while the version and the UTC
-- day are unchanged, so reading it costs one indexed row instead of an
-- aggregate over a month of roll-up rows (365 days × 20 guilds × 200
-- users is 1.46 million rows, 120,000 of them in the page's 30 days).
-- The triggers update that single row; SQLite has a single writer, so
-- they add no contention, only a row write per changed row.
-- kimi_assistant_tool_calls_created lets the page count the window's tool
-- calls with a range scan (the module index leads with the module).

-- +goose Up
CREATE TABLE kimi_assistant_usage_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL DEFAULT 0 CHECK (version >= 0)
) STRICT;
INSERT INTO kimi_assistant_usage_version (id, version) VALUES (1, 0);

CREATE INDEX kimi_assistant_tool_calls_created ON kimi_assistant_tool_calls (created_ms);

-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_version_usage_insert AFTER INSERT ON kimi_assistant_usage
BEGIN UPDATE kimi_assistant_usage_version SET version = version + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_version_usage_update AFTER UPDATE ON kimi_assistant_usage
BEGIN UPDATE kimi_assistant_usage_version SET version = version + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_version_usage_delete AFTER DELETE ON kimi_assistant_usage
BEGIN UPDATE kimi_assistant_usage_version SET version = version + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_version_errors_insert AFTER INSERT ON kimi_assistant_usage_errors
BEGIN UPDATE kimi_assistant_usage_version SET version = version + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_version_errors_update AFTER UPDATE ON kimi_assistant_usage_errors
BEGIN UPDATE kimi_assistant_usage_version SET version = version + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_version_errors_delete AFTER DELETE ON kimi_assistant_usage_errors
BEGIN UPDATE kimi_assistant_usage_version SET version = version + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_version_turn_end AFTER UPDATE OF status ON kimi_assistant_turns
BEGIN UPDATE kimi_assistant_usage_version SET version = version + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_version_turn_delete AFTER DELETE ON kimi_assistant_turns
BEGIN UPDATE kimi_assistant_usage_version SET version = version + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_version_tool_insert AFTER INSERT ON kimi_assistant_tool_calls
BEGIN UPDATE kimi_assistant_usage_version SET version = version + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_version_tool_delete AFTER DELETE ON kimi_assistant_tool_calls
BEGIN UPDATE kimi_assistant_usage_version SET version = version + 1 WHERE id = 1; END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER kimi_assistant_usage_version_tool_delete;
DROP TRIGGER kimi_assistant_usage_version_tool_insert;
DROP TRIGGER kimi_assistant_usage_version_turn_delete;
DROP TRIGGER kimi_assistant_usage_version_turn_end;
DROP TRIGGER kimi_assistant_usage_version_errors_delete;
DROP TRIGGER kimi_assistant_usage_version_errors_update;
DROP TRIGGER kimi_assistant_usage_version_errors_insert;
DROP TRIGGER kimi_assistant_usage_version_usage_delete;
DROP TRIGGER kimi_assistant_usage_version_usage_update;
DROP TRIGGER kimi_assistant_usage_version_usage_insert;
DROP INDEX kimi_assistant_tool_calls_created;
DROP TABLE kimi_assistant_usage_version;
