-- The durable scheduler (app/scheduler): module jobs that survive restarts
-- and kill -9. A job is keyed by (module, job_key); a schedule is an upsert
-- that replaces the definition (handler, times, backoff, payload) with a
-- fresh revision, resets attempt and last_error and keeps an existing
-- lease. A claim leases a row (leased_until_ms, lease_token, lease_holder);
-- a settle is guarded by the lease token and the revision, so an older
-- execution never clobbers a replacement. Times are unix milliseconds,
-- durations nanoseconds.
--
-- kimi_scheduler_runner is the single-runner lease: one row, held by the
-- process that runs jobs; a second process on the same database stands by.

-- +goose Up
CREATE TABLE kimi_scheduler_jobs (
    module          TEXT NOT NULL CHECK (length(module) BETWEEN 1 AND 64),
    job_key         TEXT NOT NULL CHECK (length(job_key) BETWEEN 1 AND 128),
    handler         TEXT NOT NULL CHECK (length(handler) BETWEEN 1 AND 64),
    run_at_ms       INTEGER NOT NULL,
    interval_ns     INTEGER NOT NULL DEFAULT 0 CHECK (interval_ns >= 0),
    jitter_ns       INTEGER NOT NULL DEFAULT 0 CHECK (jitter_ns >= 0),
    backoff_base_ns INTEGER NOT NULL CHECK (backoff_base_ns > 0),
    backoff_max_ns  INTEGER NOT NULL CHECK (backoff_max_ns > 0),
    backoff_mult    REAL NOT NULL CHECK (backoff_mult >= 1),
    payload         TEXT NOT NULL DEFAULT '{}',
    revision        TEXT NOT NULL,
    attempt         INTEGER NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    leased_until_ms INTEGER,
    lease_token     TEXT,
    lease_holder    TEXT,
    last_error      TEXT,
    created_ms      INTEGER NOT NULL,
    updated_ms      INTEGER NOT NULL,
    PRIMARY KEY (module, job_key)
) STRICT;
CREATE INDEX kimi_scheduler_jobs_due ON kimi_scheduler_jobs (module, run_at_ms, job_key);
CREATE INDEX kimi_scheduler_jobs_leased ON kimi_scheduler_jobs (module, leased_until_ms)
    WHERE leased_until_ms IS NOT NULL;

CREATE TABLE kimi_scheduler_runner (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    token           TEXT,
    holder          TEXT,
    leased_until_ms INTEGER NOT NULL DEFAULT 0
) STRICT;
INSERT INTO kimi_scheduler_runner (id) VALUES (1);

-- +goose Down
DROP TABLE kimi_scheduler_runner;
DROP TABLE kimi_scheduler_jobs;
