-- Scheduled results (app/results, issue 28): a claim writes the lease
-- columns only. Before, a claim set status 'delivering' and the settle set
-- the outcome, so a notification's status changed twice, and each change
-- rewrote three status-keyed indexes and fired the count trigger. Now:
--
--   - "delivering" is derived, never stored: a row whose lease is live
--     (lease_token <> '' and lease_until_ms past now). The rows stored as
--     'delivering' become 'pending' here, their lease kept (a delivery
--     that was running when the old binary stopped is claimable once its
--     lease runs out, as before). The CHECK still admits the old value
--     (SQLite cannot change a CHECK in place, and nothing writes it).
--   - The live leases are kept by a partial index (the admin's delivering
--     count and filter, the dispatcher's next lease expiry): a claim adds
--     an entry to it, a settle (which clears the token) removes it.
--   - The two indexes /results read by subscription and status (_sub for
--     counts past expiry and the oldest open row, _status_page for the
--     status filter's keyset pages) are merged into one, ordered by
--     expiry (every row expires Retention after its publication, so that
--     is publication order too).
--   - The status-change trigger goes: the dispatcher, which makes every
--     status change (settles, expiry, quarantine), writes the count
--     deltas of a step once, in the step's transaction. The insert and
--     delete triggers stay: inserts are the producer's (one upsert in its
--     transaction per notification), deletes come by cascade from tasks
--     and subscriptions; each fires once in a row's life.
--
-- Down restores 00008's indexes and triggers; rows leased when it runs stay
-- in their stored status (they read as claimable once the lease runs out).

-- +goose Up
DROP TRIGGER kimi_result_counts_update;
-- The delete trigger's decrement never goes below 0, as the dispatcher's
-- deltas do not: a count wronged (by hand, or by a bug) must not make
-- every later delete of its rows — a task's deletion, a purge — fail.
DROP TRIGGER kimi_result_counts_delete;
-- +goose StatementBegin
CREATE TRIGGER kimi_result_counts_delete AFTER DELETE ON kimi_result_notifications BEGIN
    UPDATE kimi_result_counts SET n = max(0, n - 1)
        WHERE module = old.module AND name = old.name AND guild_id = old.guild_id AND status = old.status;
END;
-- +goose StatementEnd
UPDATE kimi_result_counts SET n = n + (SELECT n FROM kimi_result_counts d
    WHERE d.module = kimi_result_counts.module AND d.name = kimi_result_counts.name
      AND d.guild_id = kimi_result_counts.guild_id AND d.status = 'delivering')
  WHERE status = 'pending' AND EXISTS (SELECT 1 FROM kimi_result_counts d
    WHERE d.module = kimi_result_counts.module AND d.name = kimi_result_counts.name
      AND d.guild_id = kimi_result_counts.guild_id AND d.status = 'delivering');
INSERT INTO kimi_result_counts (module, name, guild_id, status, n)
  SELECT module, name, guild_id, 'pending', n FROM kimi_result_counts d WHERE status = 'delivering'
  AND NOT EXISTS (SELECT 1 FROM kimi_result_counts p WHERE p.module = d.module AND p.name = d.name AND p.guild_id = d.guild_id AND p.status = 'pending');
DELETE FROM kimi_result_counts WHERE status = 'delivering';
UPDATE kimi_result_notifications SET status = 'pending' WHERE status = 'delivering';

DROP INDEX kimi_result_notifications_sub;
DROP INDEX kimi_result_notifications_status_page;
-- /results by subscription and status: the counts past expiry (a range),
-- the oldest open row (a seek), the status filter's pages (keyset on
-- expiry and id, newest first).
CREATE INDEX kimi_result_notifications_status ON kimi_result_notifications (module, name, guild_id, status, expires_ms, id);
-- The live and stale leases: few rows (the dispatcher's claims in flight,
-- and a crashed process's until they are claimed again).
CREATE INDEX kimi_result_notifications_leased ON kimi_result_notifications (module, name, guild_id, status, lease_until_ms)
    WHERE lease_token <> '';

-- +goose Down
DROP TRIGGER kimi_result_counts_delete;
-- +goose StatementBegin
CREATE TRIGGER kimi_result_counts_delete AFTER DELETE ON kimi_result_notifications BEGIN
    UPDATE kimi_result_counts SET n = n - 1
        WHERE module = old.module AND name = old.name AND guild_id = old.guild_id AND status = old.status;
END;
-- +goose StatementEnd
DROP INDEX kimi_result_notifications_leased;
DROP INDEX kimi_result_notifications_status;
CREATE INDEX kimi_result_notifications_sub ON kimi_result_notifications (module, name, guild_id, status, expires_ms);
CREATE INDEX kimi_result_notifications_status_page ON kimi_result_notifications (module, name, guild_id, status, published_ms DESC, id DESC);
-- +goose StatementBegin
CREATE TRIGGER kimi_result_counts_update AFTER UPDATE OF status ON kimi_result_notifications WHEN old.status <> new.status BEGIN
    UPDATE kimi_result_counts SET n = n - 1
        WHERE module = old.module AND name = old.name AND guild_id = old.guild_id AND status = old.status;
    INSERT INTO kimi_result_counts (module, name, guild_id, status, n) VALUES (new.module, new.name, new.guild_id, new.status, 1)
        ON CONFLICT (module, name, guild_id, status) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd
