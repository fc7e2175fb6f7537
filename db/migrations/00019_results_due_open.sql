-- Scheduled results (app/results): the dispatcher's due index holds the
-- open rows only. It held every row, so each acknowledgement (the common
-- settle) moved the row's entry from 'pending' to 'acknowledged' (a delete
-- and an insert) where it now only deletes it, and the acknowledged rows,
-- most of the table for the retention's seven days, no longer weigh on
-- the index. The claim (dueWhere) and the next-due query name the index's
-- condition, so SQLite can use it (TestQueryPlans).

-- +goose Up
DROP INDEX kimi_result_notifications_due;
CREATE INDEX kimi_result_notifications_due ON kimi_result_notifications (status, retry_ms, published_ms, id)
    WHERE status IN ('pending', 'retry', 'blocked');

-- +goose Down
DROP INDEX kimi_result_notifications_due;
CREATE INDEX kimi_result_notifications_due ON kimi_result_notifications (status, retry_ms, published_ms, id);
