-- The module host (app/modstore): the ledger of each module's named
-- migrations. A module's step and its ledger row commit in one
-- transaction; (module, position) and (module, name) are immutable once
-- written, so a renamed, reordered or removed step is refused. Module
-- tables themselves are `<module prefix>_<table>` (never kimi_…) and are
-- kept when a module is disabled.

-- +goose Up
CREATE TABLE kimi_module_migrations (
    module     TEXT NOT NULL CHECK (length(module) BETWEEN 1 AND 64),
    position   INTEGER NOT NULL CHECK (position >= 0),
    name       TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    applied_ms INTEGER NOT NULL,
    PRIMARY KEY (module, position),
    UNIQUE (module, name)
) STRICT;

-- +goose Down
DROP TABLE kimi_module_migrations;
