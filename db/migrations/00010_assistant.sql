-- The assistant's conversations (app/assistant; issue 25 item 8,
-- reference assistant.md §2.5 and §3).
--
-- kimi_assistant_conversations is one row per root: its place (guild,
-- channel or thread and the thread's parent; in a DM guild_id is 0 and
-- dm_user_id the user) and the root message (the message that started it,
-- or the interaction's id for /ask), its owner and whether only the owner
-- may continue it (/ask private:true).
-- kimi_assistant_delivered maps every message Kimi sent (each chunk) to
-- its conversation, written when the message is sent, so a reply to it
-- continues the conversation after a restart.
-- kimi_assistant_messages is the transcript: each turn's trigger (role
-- user, the author's sanitized display name) and delivered reply (role
-- assistant). Tool calls are not replayed into later turns.
-- kimi_assistant_turns is one row per turn; at most one is running per
-- conversation (kimi_assistant_turns_running); a crash leaves it running
-- until the next start marks it interrupted.
-- kimi_assistant_tool_calls is each turn's tool calls in order, with
-- excerpts of at most 2 KB of the arguments and the result.
-- kimi_assistant_tools is the searchable tools browse_tools' load
-- activated in a conversation.
-- Deleting a conversation deletes all of its rows. Times are unix
-- milliseconds (_ms); Discord ids are > 0, 0 for none.

-- +goose Up
CREATE TABLE kimi_assistant_conversations (
    id              INTEGER PRIMARY KEY,
    guild_id        INTEGER NOT NULL CHECK (guild_id >= 0),
    channel_id      INTEGER NOT NULL CHECK (channel_id > 0),
    parent_id       INTEGER NOT NULL DEFAULT 0 CHECK (parent_id >= 0),
    dm_user_id      INTEGER NOT NULL DEFAULT 0 CHECK (dm_user_id >= 0),
    root_message_id INTEGER NOT NULL CHECK (root_message_id > 0),
    owner_id        INTEGER NOT NULL CHECK (owner_id > 0),
    owner_only      INTEGER NOT NULL DEFAULT 0 CHECK (owner_only IN (0, 1)),
    created_ms      INTEGER NOT NULL,
    updated_ms      INTEGER NOT NULL,
    -- A guild place has no DM user; a DM has no guild and no parent.
    CHECK ((guild_id > 0 AND dm_user_id = 0) OR (guild_id = 0 AND dm_user_id > 0 AND parent_id = 0)),
    -- Routing: a place's root (a redelivered trigger finds its root).
    UNIQUE (channel_id, root_message_id)
) STRICT;
-- Retention and privacy: a user's conversations, oldest first.
CREATE INDEX kimi_assistant_conversations_owner ON kimi_assistant_conversations (owner_id, updated_ms);
CREATE INDEX kimi_assistant_conversations_updated ON kimi_assistant_conversations (updated_ms);

CREATE TABLE kimi_assistant_delivered (
    message_id      INTEGER PRIMARY KEY CHECK (message_id > 0),
    conversation_id INTEGER NOT NULL REFERENCES kimi_assistant_conversations (id) ON DELETE CASCADE,
    channel_id      INTEGER NOT NULL CHECK (channel_id > 0),
    created_ms      INTEGER NOT NULL
) STRICT;
CREATE INDEX kimi_assistant_delivered_conversation ON kimi_assistant_delivered (conversation_id);

CREATE TABLE kimi_assistant_turns (
    id                 INTEGER PRIMARY KEY,
    conversation_id    INTEGER NOT NULL REFERENCES kimi_assistant_conversations (id) ON DELETE CASCADE,
    trigger_kind       TEXT NOT NULL CHECK (trigger_kind IN ('message', 'ask')),
    trigger_message_id INTEGER NOT NULL CHECK (trigger_message_id > 0),
    user_id            INTEGER NOT NULL CHECK (user_id > 0),
    guild_id           INTEGER NOT NULL CHECK (guild_id >= 0),
    channel_id         INTEGER NOT NULL CHECK (channel_id > 0),
    status             TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed', 'interrupted', 'cancelled')),
    started_ms         INTEGER NOT NULL,
    duration_ms        INTEGER NOT NULL DEFAULT 0 CHECK (duration_ms >= 0),
    iterations         INTEGER NOT NULL DEFAULT 0 CHECK (iterations >= 0),
    model_served       TEXT NOT NULL DEFAULT '' CHECK (length(model_served) <= 200),
    prompt_tokens      INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens  INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    cached_tokens      INTEGER NOT NULL DEFAULT 0 CHECK (cached_tokens >= 0),
    error_kind         TEXT NOT NULL DEFAULT '' CHECK (length(error_kind) <= 64)
) STRICT;
-- One running turn per conversation; start-up finds the running ones.
CREATE UNIQUE INDEX kimi_assistant_turns_running ON kimi_assistant_turns (conversation_id) WHERE status = 'running';
-- A conversation's turns; a user's turns (privacy, usage); retention.
CREATE INDEX kimi_assistant_turns_conversation ON kimi_assistant_turns (conversation_id, id);
CREATE INDEX kimi_assistant_turns_user ON kimi_assistant_turns (user_id, started_ms);
CREATE INDEX kimi_assistant_turns_started ON kimi_assistant_turns (started_ms);

CREATE TABLE kimi_assistant_messages (
    id                 INTEGER PRIMARY KEY,
    conversation_id    INTEGER NOT NULL REFERENCES kimi_assistant_conversations (id) ON DELETE CASCADE,
    turn_id            INTEGER NOT NULL REFERENCES kimi_assistant_turns (id) ON DELETE CASCADE,
    role               TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    author_id          INTEGER NOT NULL CHECK (author_id >= 0),
    author_name        TEXT NOT NULL CHECK (length(author_name) <= 64),
    discord_message_id INTEGER NOT NULL DEFAULT 0 CHECK (discord_message_id >= 0),
    content            TEXT NOT NULL CHECK (length(CAST(content AS BLOB)) <= 100000),
    created_ms         INTEGER NOT NULL
) STRICT;
-- History: a conversation's last messages, newest first.
CREATE INDEX kimi_assistant_messages_conversation ON kimi_assistant_messages (conversation_id, id DESC);
CREATE INDEX kimi_assistant_messages_turn ON kimi_assistant_messages (turn_id);

CREATE TABLE kimi_assistant_tool_calls (
    turn_id     INTEGER NOT NULL REFERENCES kimi_assistant_turns (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL CHECK (seq >= 1),
    tool        TEXT NOT NULL CHECK (length(tool) BETWEEN 1 AND 64),
    module      TEXT NOT NULL DEFAULT '' CHECK (length(module) <= 64),
    outcome     TEXT NOT NULL CHECK (outcome IN ('ok', 'unknown', 'bad_arguments', 'not_activated', 'failed', 'truncated', 'timeout', 'cancelled')),
    duration_ms INTEGER NOT NULL DEFAULT 0 CHECK (duration_ms >= 0),
    arguments   TEXT NOT NULL DEFAULT '' CHECK (length(CAST(arguments AS BLOB)) <= 2048),
    result      TEXT NOT NULL DEFAULT '' CHECK (length(CAST(result AS BLOB)) <= 2048),
    created_ms  INTEGER NOT NULL,
    PRIMARY KEY (turn_id, seq)
) STRICT;
-- /modules/{name}: a module's tool calls and errors over 30 days.
CREATE INDEX kimi_assistant_tool_calls_module ON kimi_assistant_tool_calls (module, tool, created_ms);

CREATE TABLE kimi_assistant_tools (
    conversation_id INTEGER NOT NULL REFERENCES kimi_assistant_conversations (id) ON DELETE CASCADE,
    tool            TEXT NOT NULL CHECK (length(tool) BETWEEN 1 AND 64),
    activated_ms    INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, tool)
) STRICT;

-- +goose Down
DROP TABLE kimi_assistant_tools;
DROP TABLE kimi_assistant_tool_calls;
DROP TABLE kimi_assistant_messages;
DROP TABLE kimi_assistant_turns;
DROP TABLE kimi_assistant_delivered;
DROP TABLE kimi_assistant_conversations;
