-- Configuration proposals (app/proposals; reference §2.11, §4.1).
--
-- kimi_proposals holds one row per proposal: the proposed document with
-- its revision, the exact live document when it was made (the conflict
-- check and the rollback baseline), who proposed it and from which module,
-- its state (pending → applied | rejected, single use) and the review
-- card's message once posted. kimi_proposal_events is each proposal's
-- decision history (created, card_posted, approve_failed, applied,
-- rejected, recovered) with the live revisions before and after. Times are
-- unix milliseconds (_ms); ids are snowflakes (> 0) or 0 for none.

-- +goose Up
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

-- +goose Down
DROP TABLE kimi_proposal_events;
DROP TABLE kimi_proposals;
