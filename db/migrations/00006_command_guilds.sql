-- Slash-command bookkeeping (app/host, app/discord).
--
-- kimi_command_guilds records every (module, guild) a module gave a
-- per-guild command set (Interactions.ReplaceGuildCommands): a module that
-- is later disabled or closed leaves its row, and the next sync pushes that
-- guild's set without it and forgets the row.
--
-- kimi_command_sync is the hash of the command set last accepted by Discord
-- per application and scope (guild_id 0: the global commands), so a READY
-- or GUILD_CREATE with an unchanged set sends no bulk overwrite.

-- +goose Up
CREATE TABLE kimi_command_guilds (
    module     TEXT NOT NULL CHECK (length(module) BETWEEN 1 AND 64),
    guild_id   INTEGER NOT NULL CHECK (guild_id > 0),
    updated_ms INTEGER NOT NULL,
    PRIMARY KEY (module, guild_id)
) STRICT;

CREATE TABLE kimi_command_sync (
    app_id    TEXT NOT NULL CHECK (length(app_id) BETWEEN 1 AND 32),
    guild_id  INTEGER NOT NULL CHECK (guild_id >= 0),
    hash      TEXT NOT NULL,
    synced_ms INTEGER NOT NULL,
    PRIMARY KEY (app_id, guild_id)
) STRICT;

-- +goose Down
DROP TABLE kimi_command_sync;
DROP TABLE kimi_command_guilds;
