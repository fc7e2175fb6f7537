-- Scheduled tasks (app/tasks; reference §5.1, issue 16).
--
-- kimi_tasks is one row per task: its guild, name, owner (whose authority
-- is re-checked at every delivery), state (active | paused |
-- needs_attention), current revision, and the runner's bookkeeping: the
-- last occurrence handled (last_due_ms, the task's creation for a new one)
-- and the next one (next_due_ms, 0 when the schedule has none left).
-- kimi_task_revisions keeps every saved definition as JSON (schedule
-- fields, content template, embed, attachment metadata, destinations,
-- mention lists, log channel) with who saved it: a run names the revision
-- it was made from, so an edit never changes a past run.
-- kimi_task_files holds the attachments' bytes of each revision.
-- kimi_task_runs is one row per run or per batch of skipped occurrences;
-- kimi_task_posts is each run's Discord messages (chunks) in delivery
-- order. Deleting a task deletes its revisions, files, runs and posts.
-- Times are unix milliseconds (_ms); Discord ids are > 0, 0 for none.

-- +goose Up
CREATE TABLE kimi_tasks (
    id          TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 32 AND id NOT GLOB '*[^0-9a-f]*'),
    guild_id    INTEGER NOT NULL CHECK (guild_id > 0),
    name        TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    owner_id    INTEGER NOT NULL CHECK (owner_id > 0),
    state       TEXT NOT NULL CHECK (state IN ('active', 'paused', 'needs_attention')),
    revision    INTEGER NOT NULL CHECK (revision >= 1),
    last_due_ms INTEGER NOT NULL,
    next_due_ms INTEGER NOT NULL DEFAULT 0 CHECK (next_due_ms >= 0),
    created_ms  INTEGER NOT NULL,
    updated_ms  INTEGER NOT NULL
) STRICT;
-- /tasks: a guild's tasks and all tasks, newest first (keyset pages).
CREATE INDEX kimi_tasks_guild ON kimi_tasks (guild_id, created_ms DESC, id DESC);
CREATE INDEX kimi_tasks_created ON kimi_tasks (created_ms DESC, id DESC);
-- The runner: active tasks by next occurrence.
CREATE INDEX kimi_tasks_due ON kimi_tasks (next_due_ms, id) WHERE state = 'active' AND next_due_ms > 0;

CREATE TABLE kimi_task_revisions (
    task_id    TEXT NOT NULL REFERENCES kimi_tasks (id) ON DELETE CASCADE,
    revision   INTEGER NOT NULL CHECK (revision >= 1),
    definition TEXT NOT NULL CHECK (json_valid(definition) AND length(CAST(definition AS BLOB)) <= 1000000),
    actor      TEXT NOT NULL CHECK (length(actor) BETWEEN 1 AND 200),
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (task_id, revision)
) STRICT;

CREATE TABLE kimi_task_files (
    task_id  TEXT NOT NULL,
    revision INTEGER NOT NULL,
    seq      INTEGER NOT NULL CHECK (seq >= 1),
    name     TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    bytes    BLOB NOT NULL,
    size     INTEGER NOT NULL CHECK (size = length(bytes) AND size <= 26214400),
    PRIMARY KEY (task_id, revision, seq),
    FOREIGN KEY (task_id, revision) REFERENCES kimi_task_revisions (task_id, revision) ON DELETE CASCADE
) STRICT;

CREATE TABLE kimi_task_runs (
    id            TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 32 AND id NOT GLOB '*[^0-9a-f]*'),
    task_id       TEXT NOT NULL REFERENCES kimi_tasks (id) ON DELETE CASCADE,
    revision      INTEGER NOT NULL CHECK (revision >= 1),
    due_ms        INTEGER NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('pending', 'running', 'delivering', 'completed', 'failed', 'skipped', 'uncertain', 'preview')),
    detail        TEXT NOT NULL DEFAULT '' CHECK (length(detail) <= 4000),
    skipped_count INTEGER NOT NULL DEFAULT 0 CHECK (skipped_count >= 0),
    created_ms    INTEGER NOT NULL,
    started_ms    INTEGER NOT NULL DEFAULT 0,
    finished_ms   INTEGER NOT NULL DEFAULT 0,
    FOREIGN KEY (task_id, revision) REFERENCES kimi_task_revisions (task_id, revision)
) STRICT;
-- The runner: pending runs by due time.
CREATE INDEX kimi_task_runs_pending ON kimi_task_runs (due_ms, id) WHERE status = 'pending';
-- History: a task's runs, newest first.
CREATE INDEX kimi_task_runs_task ON kimi_task_runs (task_id, due_ms DESC, id DESC);

CREATE TABLE kimi_task_posts (
    run_id          TEXT NOT NULL REFERENCES kimi_task_runs (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL CHECK (seq >= 1),
    chunk_index     INTEGER NOT NULL CHECK (chunk_index >= 1),
    chunk_total     INTEGER NOT NULL CHECK (chunk_total >= chunk_index),
    channel_id      INTEGER NOT NULL CHECK (channel_id > 0),
    kind            TEXT NOT NULL CHECK (kind IN ('post', 'log')),
    content         TEXT NOT NULL CHECK (length(content) <= 2000),
    embed           TEXT NOT NULL DEFAULT '' CHECK (embed = '' OR json_valid(embed)),
    file_ids        TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(file_ids)),
    mentions        TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(mentions)),
    status          TEXT NOT NULL CHECK (status IN ('pending', 'sending', 'sent', 'failed', 'uncertain')),
    attempts        INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    token           TEXT NOT NULL DEFAULT '',
    message_id      INTEGER NOT NULL DEFAULT 0 CHECK (message_id >= 0),
    published_embed TEXT NOT NULL DEFAULT '' CHECK (published_embed = '' OR json_valid(published_embed)),
    detail          TEXT NOT NULL DEFAULT '' CHECK (length(detail) <= 4000),
    updated_ms      INTEGER NOT NULL DEFAULT 0,
    -- A run's posts in delivery order.
    PRIMARY KEY (run_id, seq)
) STRICT;

-- +goose Down
DROP TABLE kimi_task_posts;
DROP TABLE kimi_task_runs;
DROP TABLE kimi_task_files;
DROP TABLE kimi_task_revisions;
DROP TABLE kimi_tasks;
