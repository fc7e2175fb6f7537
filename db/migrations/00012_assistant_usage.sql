-- The assistant's usage, without content (issue 26 items 1, 2 and 5).
--
-- kimi_assistant_usage is the daily roll-up: one row per UTC day, guild
-- (0 for a DM), user and model served ('' when no response named one, e.g.
-- a turn refused or failed before any answer), with the model calls, the
-- prompt, completion and cached tokens every response reported (counted
-- as each response arrives, so a turn that fails later still accounts what
-- the provider billed) and the turns (a turn is counted once, under the
-- model of its last response, or '' without one). It is written in the
-- same transaction as the turn's own rows, holds no message text, is kept
-- 365 days, and outlives retention and /forget (which delete content).
-- kimi_assistant_usage_errors counts the turns that ended in an error, per
-- day, guild, user and kind (provider_4xx, provider_5xx, provider_stall,
-- tool_error, timeout, busy, budget, rate_limit, iteration_cap, …).
-- Days are 'YYYY-MM-DD' in UTC; Discord ids are > 0, 0 for none.

-- +goose Up
CREATE TABLE kimi_assistant_usage (
    day               TEXT NOT NULL CHECK (length(day) = 10 AND day GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
    guild_id          INTEGER NOT NULL CHECK (guild_id >= 0),
    user_id           INTEGER NOT NULL CHECK (user_id > 0),
    model             TEXT NOT NULL DEFAULT '' CHECK (length(model) <= 200),
    calls             INTEGER NOT NULL DEFAULT 0 CHECK (calls >= 0),
    prompt_tokens     INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    cached_tokens     INTEGER NOT NULL DEFAULT 0 CHECK (cached_tokens >= 0),
    turns             INTEGER NOT NULL DEFAULT 0 CHECK (turns >= 0),
    PRIMARY KEY (day, guild_id, user_id, model)
) STRICT, WITHOUT ROWID;
-- A guild's budget and usage page (by day); a user's budget in a guild.
CREATE INDEX kimi_assistant_usage_guild ON kimi_assistant_usage (guild_id, day);
CREATE INDEX kimi_assistant_usage_user ON kimi_assistant_usage (user_id, guild_id, day);

CREATE TABLE kimi_assistant_usage_errors (
    day      TEXT NOT NULL CHECK (length(day) = 10 AND day GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
    guild_id INTEGER NOT NULL CHECK (guild_id >= 0),
    user_id  INTEGER NOT NULL CHECK (user_id > 0),
    kind     TEXT NOT NULL CHECK (length(kind) BETWEEN 1 AND 64),
    count    INTEGER NOT NULL DEFAULT 0 CHECK (count >= 0),
    PRIMARY KEY (day, guild_id, user_id, kind)
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE kimi_assistant_usage_errors;
DROP TABLE kimi_assistant_usage;
