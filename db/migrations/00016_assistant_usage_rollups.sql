-- Roll-ups the usage page reads instead of the rows under them (issue 26
-- item 10): with 365 days × 20 guilds × 200 members of kimi_assistant_usage
-- (120,000 rows in the page's 30 days), a report read by aggregating the
-- roll-up took a third of a second. Each table below is kept exact by
-- triggers on the table it sums (insert, update and delete alike, so a
-- pruned, forgotten or deleted row leaves it as it leaves the rows under
-- it), in the writer's own transaction; a turn's write adds one row write
-- to each. Each is filled from the rows already there.
--
-- kimi_assistant_usage_daily: the roll-up summed over users, by day, guild
--   and model (30 days × guilds × models rows for the page's by-day,
--   by-model and by-guild tables, and the daily and monthly budgets).
-- kimi_assistant_usage_window / _users: each user's sums over the days
--   from first_day on, every guild together (the page's top users). The
--   triggers count a row whose day is at or after first_day; the report
--   moves first_day to its window's first day when the day turns,
--   subtracting the days that left (Conversations.advanceUsageWindow).
--   It starts at '9999-12-31' (nothing counted): the first report fills it.
-- kimi_assistant_turn_latency: finished turns by the UTC day they started
--   and their duration, exact below 1 s and to the nearest 100 ms (half
--   up) above: the page shows milliseconds below 1 s and seconds to one
--   decimal, rounded half up, above, so a percentile of the buckets shows
--   as the exact one would.
-- kimi_assistant_tool_usage: tool calls by the UTC day they were made,
--   tool and module, with the calls that ran the tool and those that
--   failed (ToolStat's rules: outcomes ok, truncated and failed ran it).
-- kimi_assistant_log_version: one row whose version goes up whenever a
--   conversation's row changes (its summary columns are kept by 00014's
--   triggers, so every turn, tool call and delete changes it): the
--   conversation log keeps its last pages while it stays.

-- +goose Up
CREATE TABLE kimi_assistant_usage_daily (
    day               TEXT NOT NULL,
    guild_id          INTEGER NOT NULL,
    model             TEXT NOT NULL,
    calls             INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens     INTEGER NOT NULL DEFAULT 0,
    turns             INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (day, guild_id, model)
) STRICT, WITHOUT ROWID;
INSERT INTO kimi_assistant_usage_daily
SELECT day, guild_id, model, sum(calls), sum(prompt_tokens), sum(completion_tokens), sum(cached_tokens), sum(turns)
FROM kimi_assistant_usage GROUP BY day, guild_id, model;

-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_daily_insert AFTER INSERT ON kimi_assistant_usage
BEGIN
    INSERT INTO kimi_assistant_usage_daily VALUES (NEW.day, NEW.guild_id, NEW.model,
        NEW.calls, NEW.prompt_tokens, NEW.completion_tokens, NEW.cached_tokens, NEW.turns)
    ON CONFLICT DO UPDATE SET calls = calls + excluded.calls, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
        completion_tokens = completion_tokens + excluded.completion_tokens,
        cached_tokens = cached_tokens + excluded.cached_tokens, turns = turns + excluded.turns;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_daily_update AFTER UPDATE ON kimi_assistant_usage
BEGIN
    INSERT INTO kimi_assistant_usage_daily VALUES (OLD.day, OLD.guild_id, OLD.model,
        -OLD.calls, -OLD.prompt_tokens, -OLD.completion_tokens, -OLD.cached_tokens, -OLD.turns)
    ON CONFLICT DO UPDATE SET calls = calls + excluded.calls, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
        completion_tokens = completion_tokens + excluded.completion_tokens,
        cached_tokens = cached_tokens + excluded.cached_tokens, turns = turns + excluded.turns;
    INSERT INTO kimi_assistant_usage_daily VALUES (NEW.day, NEW.guild_id, NEW.model,
        NEW.calls, NEW.prompt_tokens, NEW.completion_tokens, NEW.cached_tokens, NEW.turns)
    ON CONFLICT DO UPDATE SET calls = calls + excluded.calls, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
        completion_tokens = completion_tokens + excluded.completion_tokens,
        cached_tokens = cached_tokens + excluded.cached_tokens, turns = turns + excluded.turns;
    DELETE FROM kimi_assistant_usage_daily WHERE day = OLD.day AND guild_id = OLD.guild_id AND model = OLD.model
        AND calls = 0 AND prompt_tokens = 0 AND completion_tokens = 0 AND cached_tokens = 0 AND turns = 0;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_daily_delete AFTER DELETE ON kimi_assistant_usage
BEGIN
    UPDATE kimi_assistant_usage_daily SET calls = calls - OLD.calls, prompt_tokens = prompt_tokens - OLD.prompt_tokens,
        completion_tokens = completion_tokens - OLD.completion_tokens, cached_tokens = cached_tokens - OLD.cached_tokens,
        turns = turns - OLD.turns
    WHERE day = OLD.day AND guild_id = OLD.guild_id AND model = OLD.model;
    DELETE FROM kimi_assistant_usage_daily WHERE day = OLD.day AND guild_id = OLD.guild_id AND model = OLD.model
        AND calls = 0 AND prompt_tokens = 0 AND completion_tokens = 0 AND cached_tokens = 0 AND turns = 0;
END;
-- +goose StatementEnd

CREATE TABLE kimi_assistant_usage_window (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    first_day TEXT NOT NULL
) STRICT;
INSERT INTO kimi_assistant_usage_window (id, first_day) VALUES (1, '9999-12-31');

CREATE TABLE kimi_assistant_usage_users (
    user_id           INTEGER PRIMARY KEY,
    calls             INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens     INTEGER NOT NULL DEFAULT 0,
    turns             INTEGER NOT NULL DEFAULT 0
) STRICT;
-- The top users, most tokens first, without sorting them all.
CREATE INDEX kimi_assistant_usage_users_tokens ON kimi_assistant_usage_users ((prompt_tokens + completion_tokens) DESC, user_id);

-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_users_insert AFTER INSERT ON kimi_assistant_usage
WHEN NEW.day >= (SELECT first_day FROM kimi_assistant_usage_window WHERE id = 1)
BEGIN
    INSERT INTO kimi_assistant_usage_users VALUES (NEW.user_id,
        NEW.calls, NEW.prompt_tokens, NEW.completion_tokens, NEW.cached_tokens, NEW.turns)
    ON CONFLICT DO UPDATE SET calls = calls + excluded.calls, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
        completion_tokens = completion_tokens + excluded.completion_tokens,
        cached_tokens = cached_tokens + excluded.cached_tokens, turns = turns + excluded.turns;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_users_update_old AFTER UPDATE ON kimi_assistant_usage
WHEN OLD.day >= (SELECT first_day FROM kimi_assistant_usage_window WHERE id = 1)
BEGIN
    UPDATE kimi_assistant_usage_users SET calls = calls - OLD.calls, prompt_tokens = prompt_tokens - OLD.prompt_tokens,
        completion_tokens = completion_tokens - OLD.completion_tokens, cached_tokens = cached_tokens - OLD.cached_tokens,
        turns = turns - OLD.turns
    WHERE user_id = OLD.user_id;
    DELETE FROM kimi_assistant_usage_users WHERE user_id = OLD.user_id
        AND calls = 0 AND prompt_tokens = 0 AND completion_tokens = 0 AND cached_tokens = 0 AND turns = 0;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_users_update_new AFTER UPDATE ON kimi_assistant_usage
WHEN NEW.day >= (SELECT first_day FROM kimi_assistant_usage_window WHERE id = 1)
BEGIN
    INSERT INTO kimi_assistant_usage_users VALUES (NEW.user_id,
        NEW.calls, NEW.prompt_tokens, NEW.completion_tokens, NEW.cached_tokens, NEW.turns)
    ON CONFLICT DO UPDATE SET calls = calls + excluded.calls, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
        completion_tokens = completion_tokens + excluded.completion_tokens,
        cached_tokens = cached_tokens + excluded.cached_tokens, turns = turns + excluded.turns;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_usage_users_delete AFTER DELETE ON kimi_assistant_usage
WHEN OLD.day >= (SELECT first_day FROM kimi_assistant_usage_window WHERE id = 1)
BEGIN
    UPDATE kimi_assistant_usage_users SET calls = calls - OLD.calls, prompt_tokens = prompt_tokens - OLD.prompt_tokens,
        completion_tokens = completion_tokens - OLD.completion_tokens, cached_tokens = cached_tokens - OLD.cached_tokens,
        turns = turns - OLD.turns
    WHERE user_id = OLD.user_id;
    DELETE FROM kimi_assistant_usage_users WHERE user_id = OLD.user_id
        AND calls = 0 AND prompt_tokens = 0 AND completion_tokens = 0 AND cached_tokens = 0 AND turns = 0;
END;
-- +goose StatementEnd

CREATE TABLE kimi_assistant_turn_latency (
    day   TEXT NOT NULL,
    ms    INTEGER NOT NULL,
    count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (day, ms)
) STRICT, WITHOUT ROWID;
INSERT INTO kimi_assistant_turn_latency
SELECT date(started_ms / 1000, 'unixepoch'),
    CASE WHEN duration_ms < 1000 THEN duration_ms
        ELSE (duration_ms + 50) / 100 * 100 END,
    count(*)
FROM kimi_assistant_turns WHERE status <> 'running' GROUP BY 1, 2;

-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_turn_latency_insert AFTER INSERT ON kimi_assistant_turns
WHEN NEW.status <> 'running'
BEGIN
    INSERT INTO kimi_assistant_turn_latency VALUES (date(NEW.started_ms / 1000, 'unixepoch'),
        CASE WHEN NEW.duration_ms < 1000 THEN NEW.duration_ms
            ELSE (NEW.duration_ms + 50) / 100 * 100 END, 1)
    ON CONFLICT DO UPDATE SET count = count + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_turn_latency_update_old AFTER UPDATE OF status, started_ms, duration_ms ON kimi_assistant_turns
WHEN OLD.status <> 'running'
BEGIN
    UPDATE kimi_assistant_turn_latency SET count = count - 1 WHERE day = date(OLD.started_ms / 1000, 'unixepoch')
        AND ms = CASE WHEN OLD.duration_ms < 1000 THEN OLD.duration_ms
            ELSE (OLD.duration_ms + 50) / 100 * 100 END;
    DELETE FROM kimi_assistant_turn_latency WHERE count = 0 AND day = date(OLD.started_ms / 1000, 'unixepoch')
        AND ms = CASE WHEN OLD.duration_ms < 1000 THEN OLD.duration_ms ELSE (OLD.duration_ms + 50) / 100 * 100 END;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_turn_latency_update_new AFTER UPDATE OF status, started_ms, duration_ms ON kimi_assistant_turns
WHEN NEW.status <> 'running'
BEGIN
    INSERT INTO kimi_assistant_turn_latency VALUES (date(NEW.started_ms / 1000, 'unixepoch'),
        CASE WHEN NEW.duration_ms < 1000 THEN NEW.duration_ms
            ELSE (NEW.duration_ms + 50) / 100 * 100 END, 1)
    ON CONFLICT DO UPDATE SET count = count + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_turn_latency_delete AFTER DELETE ON kimi_assistant_turns
WHEN OLD.status <> 'running'
BEGIN
    UPDATE kimi_assistant_turn_latency SET count = count - 1 WHERE day = date(OLD.started_ms / 1000, 'unixepoch')
        AND ms = CASE WHEN OLD.duration_ms < 1000 THEN OLD.duration_ms
            ELSE (OLD.duration_ms + 50) / 100 * 100 END;
    DELETE FROM kimi_assistant_turn_latency WHERE count = 0 AND day = date(OLD.started_ms / 1000, 'unixepoch')
        AND ms = CASE WHEN OLD.duration_ms < 1000 THEN OLD.duration_ms ELSE (OLD.duration_ms + 50) / 100 * 100 END;
END;
-- +goose StatementEnd

CREATE TABLE kimi_assistant_tool_usage (
    day    TEXT NOT NULL,
    tool   TEXT NOT NULL,
    module TEXT NOT NULL,
    calls  INTEGER NOT NULL DEFAULT 0,
    errors INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (day, tool, module)
) STRICT, WITHOUT ROWID;
INSERT INTO kimi_assistant_tool_usage
SELECT date(created_ms / 1000, 'unixepoch'), tool, module, count(*), count(*) FILTER (WHERE outcome = 'failed')
FROM kimi_assistant_tool_calls WHERE outcome IN ('ok', 'truncated', 'failed') GROUP BY 1, 2, 3;

-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_tool_usage_insert AFTER INSERT ON kimi_assistant_tool_calls
WHEN NEW.outcome IN ('ok', 'truncated', 'failed')
BEGIN
    INSERT INTO kimi_assistant_tool_usage VALUES (date(NEW.created_ms / 1000, 'unixepoch'), NEW.tool, NEW.module,
        1, NEW.outcome = 'failed')
    ON CONFLICT DO UPDATE SET calls = calls + 1, errors = errors + excluded.errors;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_tool_usage_update_old AFTER UPDATE OF outcome, created_ms, tool, module ON kimi_assistant_tool_calls
WHEN OLD.outcome IN ('ok', 'truncated', 'failed')
BEGIN
    UPDATE kimi_assistant_tool_usage SET calls = calls - 1, errors = errors - (OLD.outcome = 'failed')
    WHERE day = date(OLD.created_ms / 1000, 'unixepoch') AND tool = OLD.tool AND module = OLD.module;
    DELETE FROM kimi_assistant_tool_usage WHERE calls = 0
        AND day = date(OLD.created_ms / 1000, 'unixepoch') AND tool = OLD.tool AND module = OLD.module;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_tool_usage_update_new AFTER UPDATE OF outcome, created_ms, tool, module ON kimi_assistant_tool_calls
WHEN NEW.outcome IN ('ok', 'truncated', 'failed')
BEGIN
    INSERT INTO kimi_assistant_tool_usage VALUES (date(NEW.created_ms / 1000, 'unixepoch'), NEW.tool, NEW.module,
        1, NEW.outcome = 'failed')
    ON CONFLICT DO UPDATE SET calls = calls + 1, errors = errors + excluded.errors;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_tool_usage_delete AFTER DELETE ON kimi_assistant_tool_calls
WHEN OLD.outcome IN ('ok', 'truncated', 'failed')
BEGIN
    UPDATE kimi_assistant_tool_usage SET calls = calls - 1, errors = errors - (OLD.outcome = 'failed')
    WHERE day = date(OLD.created_ms / 1000, 'unixepoch') AND tool = OLD.tool AND module = OLD.module;
    DELETE FROM kimi_assistant_tool_usage WHERE calls = 0
        AND day = date(OLD.created_ms / 1000, 'unixepoch') AND tool = OLD.tool AND module = OLD.module;
END;
-- +goose StatementEnd

CREATE TABLE kimi_assistant_log_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL DEFAULT 0
) STRICT;
INSERT INTO kimi_assistant_log_version (id, version) VALUES (1, 0);
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_log_version_insert AFTER INSERT ON kimi_assistant_conversations
BEGIN UPDATE kimi_assistant_log_version SET version = version + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_log_version_update AFTER UPDATE ON kimi_assistant_conversations
BEGIN UPDATE kimi_assistant_log_version SET version = version + 1 WHERE id = 1; END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_log_version_delete AFTER DELETE ON kimi_assistant_conversations
BEGIN UPDATE kimi_assistant_log_version SET version = version + 1 WHERE id = 1; END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER kimi_assistant_log_version_delete;
DROP TRIGGER kimi_assistant_log_version_update;
DROP TRIGGER kimi_assistant_log_version_insert;
DROP TABLE kimi_assistant_log_version;
DROP TRIGGER kimi_assistant_tool_usage_delete;
DROP TRIGGER kimi_assistant_tool_usage_update_new;
DROP TRIGGER kimi_assistant_tool_usage_update_old;
DROP TRIGGER kimi_assistant_tool_usage_insert;
DROP TABLE kimi_assistant_tool_usage;
DROP TRIGGER kimi_assistant_turn_latency_delete;
DROP TRIGGER kimi_assistant_turn_latency_update_new;
DROP TRIGGER kimi_assistant_turn_latency_update_old;
DROP TRIGGER kimi_assistant_turn_latency_insert;
DROP TABLE kimi_assistant_turn_latency;
DROP TRIGGER kimi_assistant_usage_users_delete;
DROP TRIGGER kimi_assistant_usage_users_update_new;
DROP TRIGGER kimi_assistant_usage_users_update_old;
DROP TRIGGER kimi_assistant_usage_users_insert;
DROP INDEX kimi_assistant_usage_users_tokens;
DROP TABLE kimi_assistant_usage_users;
DROP TABLE kimi_assistant_usage_window;
DROP TRIGGER kimi_assistant_usage_daily_delete;
DROP TRIGGER kimi_assistant_usage_daily_update;
DROP TRIGGER kimi_assistant_usage_daily_insert;
DROP TABLE kimi_assistant_usage_daily;
