-- Scheduled results (app/results; reference §2.15, §5.2): the durable
-- outbox that notifies module subscribers of a scheduled task's confirmed
-- publication.
--
-- kimi_result_subscriptions is one row per (module, name, guild): it
-- outlives the module's downtime (closing or disabling a module leaves
-- it), a new one never replays history, and deleting it deletes its
-- notifications. paused is the operator's pause of delivery on /results.
-- kimi_result_publications is one completed run's published output, as
-- the producer recorded it in the transaction that marked its last
-- required post sent (messages as JSON, the channels the access check
-- re-reads); deleting it (task deletion, run retention) revokes every
-- notification and future file read of the run.
-- kimi_result_notifications is one row per (run, subscription): status
-- pending → delivering (leased under a token) → acknowledged, or retry /
-- blocked with the next attempt's time, or expired (30 days after
-- publication, never delivered; kept for the operator until purged).
-- Times are unix milliseconds (_ms); snowflakes are INTEGER (> 0).

-- +goose Up
CREATE TABLE kimi_result_subscriptions (
    module     TEXT NOT NULL CHECK (length(module) BETWEEN 1 AND 64),
    name       TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 64 AND name NOT GLOB '*[^a-z0-9_]*'),
    guild_id   INTEGER NOT NULL CHECK (guild_id > 0),
    created_ms INTEGER NOT NULL,
    paused     INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    PRIMARY KEY (module, name, guild_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX kimi_result_subscriptions_guild ON kimi_result_subscriptions (guild_id);

CREATE TABLE kimi_result_publications (
    run_id          TEXT PRIMARY KEY NOT NULL CHECK (length(run_id) BETWEEN 1 AND 64),
    task_id         TEXT NOT NULL CHECK (length(task_id) BETWEEN 1 AND 64),
    revision        INTEGER NOT NULL CHECK (revision >= 0),
    guild_id        INTEGER NOT NULL CHECK (guild_id > 0),
    owner_id        INTEGER NOT NULL CHECK (owner_id > 0),
    origin_channel  INTEGER NOT NULL DEFAULT 0 CHECK (origin_channel >= 0),
    published_ms    INTEGER NOT NULL,
    expires_ms      INTEGER NOT NULL,
    messages        TEXT NOT NULL CHECK (json_valid(messages))
) STRICT;
CREATE INDEX kimi_result_publications_task ON kimi_result_publications (task_id);
CREATE INDEX kimi_result_publications_expires ON kimi_result_publications (expires_ms);

CREATE TABLE kimi_result_notifications (
    id              TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 32 AND id NOT GLOB '*[^0-9a-f]*'),
    run_id          TEXT NOT NULL REFERENCES kimi_result_publications (run_id) ON DELETE CASCADE,
    module          TEXT NOT NULL,
    name            TEXT NOT NULL,
    guild_id        INTEGER NOT NULL,
    published_ms    INTEGER NOT NULL,
    expires_ms      INTEGER NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'delivering', 'retry', 'blocked', 'acknowledged', 'expired')),
    attempts        INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    retry_ms        INTEGER NOT NULL DEFAULT 0,
    lease_token     TEXT NOT NULL DEFAULT '',
    lease_until_ms  INTEGER NOT NULL DEFAULT 0,
    detail          TEXT NOT NULL DEFAULT '',
    detail_ms       INTEGER NOT NULL DEFAULT 0,
    acknowledged_ms INTEGER NOT NULL DEFAULT 0,
    FOREIGN KEY (module, name, guild_id) REFERENCES kimi_result_subscriptions (module, name, guild_id) ON DELETE CASCADE,
    UNIQUE (run_id, module, name, guild_id)
) STRICT;
-- The dispatcher's claim: due rows by status in claim order (retry,
-- publication, id), so a claim reads only the rows it takes.
CREATE INDEX kimi_result_notifications_due ON kimi_result_notifications (status, retry_ms, published_ms, id);
-- /results: counts by subscription and status, and a subscription's
-- notifications newest first (keyset pagination).
CREATE INDEX kimi_result_notifications_sub ON kimi_result_notifications (module, name, guild_id, status, expires_ms);
CREATE INDEX kimi_result_notifications_page ON kimi_result_notifications (module, name, guild_id, published_ms DESC, id DESC);
-- … and those of one status (the page's status filter).
CREATE INDEX kimi_result_notifications_status_page ON kimi_result_notifications (module, name, guild_id, status, published_ms DESC, id DESC);
-- /results: a subscription's last error, the newest detail of its retry
-- and blocked rows (few: a partial index).
CREATE INDEX kimi_result_notifications_error ON kimi_result_notifications (module, name, guild_id, detail_ms DESC, id DESC)
    WHERE status IN ('retry', 'blocked');

-- /results' counts by subscription and status, kept by the triggers below
-- on every insert, status change and delete of a notification: counting
-- 100k index entries costs ~30 ms in SQLite, the admin's budget is 20 ms
-- p99 with 100k notifications. Rows past expiry are still counted by
-- status here; /results moves the open ones to expired with a range read
-- of the _sub index (expires_ms <= now), which sees only those few.
CREATE TABLE kimi_result_counts (
    module   TEXT NOT NULL,
    name     TEXT NOT NULL,
    guild_id INTEGER NOT NULL,
    status   TEXT NOT NULL,
    n        INTEGER NOT NULL CHECK (n >= 0),
    PRIMARY KEY (module, name, guild_id, status),
    FOREIGN KEY (module, name, guild_id) REFERENCES kimi_result_subscriptions (module, name, guild_id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
-- +goose StatementBegin
CREATE TRIGGER kimi_result_counts_insert AFTER INSERT ON kimi_result_notifications BEGIN
    INSERT INTO kimi_result_counts (module, name, guild_id, status, n) VALUES (new.module, new.name, new.guild_id, new.status, 1)
        ON CONFLICT (module, name, guild_id, status) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_result_counts_update AFTER UPDATE OF status ON kimi_result_notifications WHEN old.status <> new.status BEGIN
    UPDATE kimi_result_counts SET n = n - 1
        WHERE module = old.module AND name = old.name AND guild_id = old.guild_id AND status = old.status;
    INSERT INTO kimi_result_counts (module, name, guild_id, status, n) VALUES (new.module, new.name, new.guild_id, new.status, 1)
        ON CONFLICT (module, name, guild_id, status) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kimi_result_counts_delete AFTER DELETE ON kimi_result_notifications BEGIN
    UPDATE kimi_result_counts SET n = n - 1
        WHERE module = old.module AND name = old.name AND guild_id = old.guild_id AND status = old.status;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER kimi_result_counts_delete;
DROP TRIGGER kimi_result_counts_update;
DROP TRIGGER kimi_result_counts_insert;
DROP TABLE kimi_result_counts;
DROP TABLE kimi_result_notifications;
DROP TABLE kimi_result_publications;
DROP TABLE kimi_result_subscriptions;
