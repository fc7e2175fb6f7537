-- The module selection (app/host): which compiled-in modules run, in
-- request order. A module without a row is not selected. KIMI_MODULES
-- overrides this table at boot without changing it. A module's deployment
-- settings saved on /modules live in kimi_settings under module.<name>.<field>
-- (secret = 1 for its secrets), so a backup without secrets drops them.

-- +goose Up
CREATE TABLE kimi_modules (
    name       TEXT PRIMARY KEY NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
    enabled    INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    position   INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    updated_by TEXT NOT NULL
) STRICT;

-- +goose Down
DROP TABLE kimi_modules;
