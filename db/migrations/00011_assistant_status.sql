-- The status message of an assistant turn (issue 25 item 20).
--
-- kimi_assistant_turns.status_message_id is the turn's one status message
-- (Thinking..., a tool's label, Still thinking…), recorded when the turn
-- first sends it; 0 for none (not sent yet, or /ask's, which edits its
-- deferred response instead). The turn deletes the message when it ends;
-- a crash leaves it standing with the turn running, and the next start,
-- which marks the turn interrupted, deletes it with the trigger's ⏳.

-- +goose Up
ALTER TABLE kimi_assistant_turns ADD COLUMN status_message_id INTEGER NOT NULL DEFAULT 0 CHECK (status_message_id >= 0);

-- +goose Down
ALTER TABLE kimi_assistant_turns DROP COLUMN status_message_id;
