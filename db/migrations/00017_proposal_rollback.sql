-- A proposal can be rolled back (app/proposals, issue 27): an applied
-- proposal's document restored to its base by an admin, through the same
-- compare-and-swap as its approval. kimi_proposals.state gains
-- 'rolled_back' (after applied) and kimi_proposal_events.kind the event of
-- that name. SQLite cannot change a CHECK in place, so both tables are
-- rebuilt: the old ones renamed aside (their indexes dropped first, as
-- their names are reused), the new ones created under the old names with
-- the 00007 text but for the two CHECKs, every row copied with its id, and
-- the old tables dropped (the events first, so no cascade reaches a copied
-- row). Down rebuilds them as 00007 made them; a rolled-back proposal then
-- reads rejected ("rolled back after it was applied"), its rolled_back
-- event a rejected one — the document is its base again either way.

-- +goose Up
DROP INDEX kimi_proposal_events_proposal;
DROP INDEX kimi_proposals_created;
DROP INDEX kimi_proposals_state;
DROP INDEX kimi_proposals_guild;
ALTER TABLE kimi_proposal_events RENAME TO kimi_proposal_events_old;
ALTER TABLE kimi_proposals RENAME TO kimi_proposals_old;

CREATE TABLE kimi_proposals (
    id               TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 32 AND id NOT GLOB '*[^0-9a-f]*'),
    guild_id         INTEGER NOT NULL CHECK (guild_id > 0),
    target           TEXT NOT NULL CHECK (length(target) BETWEEN 1 AND 120),
    module           TEXT NOT NULL CHECK (length(module) BETWEEN 1 AND 64),
    summary          TEXT NOT NULL CHECK (length(summary) BETWEEN 1 AND 1000),
    content          TEXT NOT NULL CHECK (length(CAST(content AS BLOB)) <= 1000000),
    content_revision TEXT NOT NULL CHECK (length(content_revision) = 64),
    base_exists      INTEGER NOT NULL CHECK (base_exists IN (0, 1)),
    base_content     TEXT NOT NULL CHECK (length(CAST(base_content AS BLOB)) <= 1000000),
    base_revision    TEXT NOT NULL CHECK (length(base_revision) = 64),
    actor_user_id    INTEGER NOT NULL CHECK (actor_user_id >= 0),
    actor_source     TEXT NOT NULL,
    actor_channel_id INTEGER NOT NULL CHECK (actor_channel_id >= 0),
    state            TEXT NOT NULL CHECK (state IN ('pending', 'applied', 'rejected', 'rolled_back')),
    decided_by_user  INTEGER NOT NULL DEFAULT 0 CHECK (decided_by_user >= 0),
    decided_by_admin TEXT NOT NULL DEFAULT '',
    decision_source  TEXT NOT NULL DEFAULT '' CHECK (decision_source IN ('', 'discord', 'web')),
    decision_reason  TEXT NOT NULL DEFAULT '',
    decided_ms       INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT NOT NULL DEFAULT '',
    card_channel_id  INTEGER NOT NULL DEFAULT 0 CHECK (card_channel_id >= 0),
    card_message_id  INTEGER NOT NULL DEFAULT 0 CHECK (card_message_id >= 0),
    created_ms       INTEGER NOT NULL,
    updated_ms       INTEGER NOT NULL
) STRICT;
-- The inbox: newest first, by state, guild, module or target.
CREATE INDEX kimi_proposals_created ON kimi_proposals (created_ms DESC, id DESC);
CREATE INDEX kimi_proposals_state ON kimi_proposals (state, created_ms DESC, id DESC);
CREATE INDEX kimi_proposals_guild ON kimi_proposals (guild_id, created_ms DESC, id DESC);

CREATE TABLE kimi_proposal_events (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    proposal_id     TEXT NOT NULL REFERENCES kimi_proposals (id) ON DELETE CASCADE,
    at_ms           INTEGER NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('created', 'card_posted', 'approve_failed', 'applied', 'rejected', 'recovered', 'rolled_back')),
    actor           TEXT NOT NULL,
    source          TEXT NOT NULL,
    detail          TEXT NOT NULL,
    before_revision TEXT NOT NULL,
    after_revision  TEXT NOT NULL
) STRICT;
CREATE INDEX kimi_proposal_events_proposal ON kimi_proposal_events (proposal_id, id);

INSERT INTO kimi_proposals (id, guild_id, target, module, summary, content, content_revision, base_exists, base_content, base_revision, actor_user_id, actor_source, actor_channel_id, state, decided_by_user, decided_by_admin, decision_source, decision_reason, decided_ms, last_error, card_channel_id, card_message_id, created_ms, updated_ms)
SELECT id, guild_id, target, module, summary, content, content_revision, base_exists, base_content, base_revision, actor_user_id, actor_source, actor_channel_id, state, decided_by_user, decided_by_admin, decision_source, decision_reason, decided_ms, last_error, card_channel_id, card_message_id, created_ms, updated_ms FROM kimi_proposals_old;
INSERT INTO kimi_proposal_events (id, proposal_id, at_ms, kind, actor, source, detail, before_revision, after_revision)
SELECT id, proposal_id, at_ms, kind, actor, source, detail, before_revision, after_revision FROM kimi_proposal_events_old;
DROP TABLE kimi_proposal_events_old;
DROP TABLE kimi_proposals_old;

-- +goose Down
DROP INDEX kimi_proposal_events_proposal;
DROP INDEX kimi_proposals_created;
DROP INDEX kimi_proposals_state;
DROP INDEX kimi_proposals_guild;
ALTER TABLE kimi_proposal_events RENAME TO kimi_proposal_events_old;
ALTER TABLE kimi_proposals RENAME TO kimi_proposals_old;

CREATE TABLE kimi_proposals (
    id               TEXT PRIMARY KEY NOT NULL CHECK (length(id) = 32 AND id NOT GLOB '*[^0-9a-f]*'),
    guild_id         INTEGER NOT NULL CHECK (guild_id > 0),
    target           TEXT NOT NULL CHECK (length(target) BETWEEN 1 AND 120),
    module           TEXT NOT NULL CHECK (length(module) BETWEEN 1 AND 64),
    summary          TEXT NOT NULL CHECK (length(summary) BETWEEN 1 AND 1000),
    content          TEXT NOT NULL CHECK (length(CAST(content AS BLOB)) <= 1000000),
    content_revision TEXT NOT NULL CHECK (length(content_revision) = 64),
    base_exists      INTEGER NOT NULL CHECK (base_exists IN (0, 1)),
    base_content     TEXT NOT NULL CHECK (length(CAST(base_content AS BLOB)) <= 1000000),
    base_revision    TEXT NOT NULL CHECK (length(base_revision) = 64),
    actor_user_id    INTEGER NOT NULL CHECK (actor_user_id >= 0),
    actor_source     TEXT NOT NULL,
    actor_channel_id INTEGER NOT NULL CHECK (actor_channel_id >= 0),
    state            TEXT NOT NULL CHECK (state IN ('pending', 'applied', 'rejected')),
    decided_by_user  INTEGER NOT NULL DEFAULT 0 CHECK (decided_by_user >= 0),
    decided_by_admin TEXT NOT NULL DEFAULT '',
    decision_source  TEXT NOT NULL DEFAULT '' CHECK (decision_source IN ('', 'discord', 'web')),
    decision_reason  TEXT NOT NULL DEFAULT '',
    decided_ms       INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT NOT NULL DEFAULT '',
    card_channel_id  INTEGER NOT NULL DEFAULT 0 CHECK (card_channel_id >= 0),
    card_message_id  INTEGER NOT NULL DEFAULT 0 CHECK (card_message_id >= 0),
    created_ms       INTEGER NOT NULL,
    updated_ms       INTEGER NOT NULL
) STRICT;
-- The inbox: newest first, by state, guild, module or target.
CREATE INDEX kimi_proposals_created ON kimi_proposals (created_ms DESC, id DESC);
CREATE INDEX kimi_proposals_state ON kimi_proposals (state, created_ms DESC, id DESC);
CREATE INDEX kimi_proposals_guild ON kimi_proposals (guild_id, created_ms DESC, id DESC);

CREATE TABLE kimi_proposal_events (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    proposal_id     TEXT NOT NULL REFERENCES kimi_proposals (id) ON DELETE CASCADE,
    at_ms           INTEGER NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('created', 'card_posted', 'approve_failed', 'applied', 'rejected', 'recovered')),
    actor           TEXT NOT NULL,
    source          TEXT NOT NULL,
    detail          TEXT NOT NULL,
    before_revision TEXT NOT NULL,
    after_revision  TEXT NOT NULL
) STRICT;
CREATE INDEX kimi_proposal_events_proposal ON kimi_proposal_events (proposal_id, id);

INSERT INTO kimi_proposals (id, guild_id, target, module, summary, content, content_revision, base_exists, base_content, base_revision, actor_user_id, actor_source, actor_channel_id, state, decided_by_user, decided_by_admin, decision_source, decision_reason, decided_ms, last_error, card_channel_id, card_message_id, created_ms, updated_ms)
SELECT id, guild_id, target, module, summary, content, content_revision, base_exists, base_content, base_revision, actor_user_id, actor_source, actor_channel_id, CASE WHEN state = 'rolled_back' THEN 'rejected' ELSE state END, decided_by_user, decided_by_admin, decision_source, CASE WHEN state = 'rolled_back' THEN 'rolled back after it was applied' ELSE decision_reason END, decided_ms, last_error, card_channel_id, card_message_id, created_ms, updated_ms FROM kimi_proposals_old;
INSERT INTO kimi_proposal_events (id, proposal_id, at_ms, kind, actor, source, detail, before_revision, after_revision)
SELECT id, proposal_id, at_ms, CASE WHEN kind = 'rolled_back' THEN 'rejected' ELSE kind END, actor, source, detail, before_revision, after_revision FROM kimi_proposal_events_old;
DROP TABLE kimi_proposal_events_old;
DROP TABLE kimi_proposals_old;
