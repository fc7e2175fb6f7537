-- The conversation log's summary columns (issue 26 items 3 and 4): what
-- /assistant/conversations shows and filters on for each conversation,
-- kept by triggers so a page of 25 never reads the turns or tool calls of
-- all conversations.
--
-- kimi_assistant_conversations gains turns (the turns begun), last_status
-- (the status of its latest turn, '' before any), tokens (prompt plus
-- completion tokens of all its turns), tool_calls and tool_errors (calls
-- whose outcome is neither ok nor truncated) and tools (the distinct tool
-- names called, comma-separated, at most ~1 KB). They hold no message
-- text. Triggers on kimi_assistant_turns and kimi_assistant_tool_calls
-- keep them; deleting a tool call's row (retention) leaves the counts.
-- The list is newest first by last activity (updated_ms, then id), with
-- an index per filter that can lead.

-- +goose Up
ALTER TABLE kimi_assistant_conversations ADD COLUMN turns INTEGER NOT NULL DEFAULT 0 CHECK (turns >= 0);
ALTER TABLE kimi_assistant_conversations ADD COLUMN last_status TEXT NOT NULL DEFAULT '' CHECK (length(last_status) <= 16);
ALTER TABLE kimi_assistant_conversations ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0 CHECK (tokens >= 0);
ALTER TABLE kimi_assistant_conversations ADD COLUMN tool_calls INTEGER NOT NULL DEFAULT 0 CHECK (tool_calls >= 0);
ALTER TABLE kimi_assistant_conversations ADD COLUMN tool_errors INTEGER NOT NULL DEFAULT 0 CHECK (tool_errors >= 0);
ALTER TABLE kimi_assistant_conversations ADD COLUMN tools TEXT NOT NULL DEFAULT '' CHECK (length(tools) <= 1200);

UPDATE kimi_assistant_conversations SET
    turns = (SELECT count(*) FROM kimi_assistant_turns t WHERE t.conversation_id = kimi_assistant_conversations.id),
    last_status = coalesce((SELECT t.status FROM kimi_assistant_turns t WHERE t.conversation_id = kimi_assistant_conversations.id ORDER BY t.id DESC LIMIT 1), ''),
    tokens = (SELECT coalesce(sum(t.prompt_tokens + t.completion_tokens), 0) FROM kimi_assistant_turns t WHERE t.conversation_id = kimi_assistant_conversations.id),
    tool_calls = (SELECT count(*) FROM kimi_assistant_tool_calls c JOIN kimi_assistant_turns t ON t.id = c.turn_id WHERE t.conversation_id = kimi_assistant_conversations.id),
    tool_errors = (SELECT count(*) FROM kimi_assistant_tool_calls c JOIN kimi_assistant_turns t ON t.id = c.turn_id
        WHERE t.conversation_id = kimi_assistant_conversations.id AND c.outcome NOT IN ('ok', 'truncated')),
    tools = coalesce(substr((SELECT group_concat(tool, ',') FROM (SELECT DISTINCT c.tool FROM kimi_assistant_tool_calls c
        JOIN kimi_assistant_turns t ON t.id = c.turn_id WHERE t.conversation_id = kimi_assistant_conversations.id ORDER BY c.tool)), 1, 1100), '');

-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_turns_summary_insert AFTER INSERT ON kimi_assistant_turns BEGIN
    UPDATE kimi_assistant_conversations SET turns = turns + 1, last_status = NEW.status,
        tokens = tokens + NEW.prompt_tokens + NEW.completion_tokens
    WHERE id = NEW.conversation_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_turns_summary_update AFTER UPDATE OF status, prompt_tokens, completion_tokens ON kimi_assistant_turns BEGIN
    UPDATE kimi_assistant_conversations SET
        tokens = max(tokens + (NEW.prompt_tokens + NEW.completion_tokens) - (OLD.prompt_tokens + OLD.completion_tokens), 0),
        last_status = CASE WHEN NEW.id = (SELECT max(id) FROM kimi_assistant_turns WHERE conversation_id = NEW.conversation_id)
            THEN NEW.status ELSE last_status END
    WHERE id = NEW.conversation_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER kimi_assistant_tool_calls_summary_insert AFTER INSERT ON kimi_assistant_tool_calls BEGIN
    UPDATE kimi_assistant_conversations SET tool_calls = tool_calls + 1,
        tool_errors = tool_errors + (NEW.outcome NOT IN ('ok', 'truncated')),
        tools = CASE
            WHEN instr(',' || tools || ',', ',' || NEW.tool || ',') > 0 OR length(tools) > 1100 THEN tools
            WHEN tools = '' THEN NEW.tool
            ELSE tools || ',' || NEW.tool END
    WHERE id = (SELECT conversation_id FROM kimi_assistant_turns WHERE id = NEW.turn_id);
END;
-- +goose StatementEnd

-- The list's filters: a guild's, a channel's (the owner's is 00010's
-- kimi_assistant_conversations_owner), a status', those with tool errors.
CREATE INDEX kimi_assistant_conversations_guild ON kimi_assistant_conversations (guild_id, updated_ms);
CREATE INDEX kimi_assistant_conversations_channel ON kimi_assistant_conversations (channel_id, updated_ms);
CREATE INDEX kimi_assistant_conversations_status ON kimi_assistant_conversations (last_status, updated_ms);
CREATE INDEX kimi_assistant_conversations_tool_errors ON kimi_assistant_conversations (updated_ms) WHERE tool_errors > 0;

-- +goose Down
DROP INDEX kimi_assistant_conversations_tool_errors;
DROP INDEX kimi_assistant_conversations_status;
DROP INDEX kimi_assistant_conversations_channel;
DROP INDEX kimi_assistant_conversations_guild;
DROP TRIGGER kimi_assistant_tool_calls_summary_insert;
DROP TRIGGER kimi_assistant_turns_summary_update;
DROP TRIGGER kimi_assistant_turns_summary_insert;
ALTER TABLE kimi_assistant_conversations DROP COLUMN tools;
ALTER TABLE kimi_assistant_conversations DROP COLUMN tool_errors;
ALTER TABLE kimi_assistant_conversations DROP COLUMN tool_calls;
ALTER TABLE kimi_assistant_conversations DROP COLUMN tokens;
ALTER TABLE kimi_assistant_conversations DROP COLUMN last_status;
ALTER TABLE kimi_assistant_conversations DROP COLUMN turns;
