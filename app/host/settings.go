package host

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// settingKeyPrefix prefixes a module's saved deployment settings in the
// store's settings table ("module.<name>.<field>"), so a backup without
// secrets drops a module's secret values like the core's.
const settingKeyPrefix = "module."

func settingKey(module, field string) string { return settingKeyPrefix + module + "." + field }

// FieldError is one invalid deployment setting, for the admin form.
type FieldError struct {
	Field   string
	Message string
}

// SettingsError lists a module's invalid settings.
type SettingsError struct {
	Module string
	Fields []FieldError
}

func (e *SettingsError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Message
	}
	return "invalid settings: " + strings.Join(parts, "; ")
}

// rawSettings merges a module's environment values (hostkit.SettingEnvName)
// with the values saved for it (saved wins), by field name.
func (h *Host) rawSettings(ctx context.Context, spec sdk.Spec) (map[string]string, map[string]string, error) {
	raw, origin := map[string]string{}, map[string]string{}
	if spec.Settings == nil {
		return raw, origin, nil
	}
	saved, err := h.savedSettings(ctx, spec.Name)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range spec.Settings.Fields {
		env := hostkit.SettingEnvName(spec.Name, f.Name)
		if v := h.getenv(env); v != "" {
			raw[f.Name], origin[f.Name] = v, env
		}
		if v, ok := saved[f.Name]; ok && (f.Exposed() || f.Secret) {
			raw[f.Name], origin[f.Name] = v, "saved"
		}
	}
	return raw, origin, nil
}

func (h *Host) savedSettings(ctx context.Context, module string) (map[string]string, error) {
	if h.store == nil {
		return map[string]string{}, nil
	}
	prefix := settingKeyPrefix + module + "."
	rows, err := h.store.Reader().QueryContext(ctx,
		`SELECT key, value FROM kimi_settings WHERE substr(key, 1, ?) = ?`, len(prefix), prefix)
	if err != nil {
		return nil, fmt.Errorf("host: read settings of %s: %w", module, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("host: read settings of %s: %w", module, err)
		}
		out[strings.TrimPrefix(k, prefix)] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("host: read settings of %s: %w", module, err)
	}
	return out, nil
}

// prepareSettings builds the module's settings; invalid ones come back as
// a *SettingsError with one FieldError per field.
func prepareSettings(spec sdk.Spec, raw map[string]string) (sdk.Settings, error) {
	if spec.Settings == nil {
		return sdk.NewSettings(nil), nil
	}
	s, err := spec.Settings.Prepare(spec.Name, raw)
	if err == nil {
		return s, nil
	}
	se := &SettingsError{Module: spec.Name}
	for _, f := range spec.Settings.Fields {
		one := sdk.SettingsDefinition{Fields: []sdk.SettingField{f}}
		sub := map[string]string{}
		if v, ok := raw[f.Name]; ok {
			sub[f.Name] = v
		}
		if _, ferr := one.Prepare(spec.Name, sub); ferr != nil {
			se.Fields = append(se.Fields, FieldError{Field: f.Name, Message: ferr.Error()})
		}
	}
	if len(se.Fields) == 0 {
		se.Fields = []FieldError{{Message: err.Error()}}
	}
	return sdk.Settings{}, se
}

// SaveSettings validates and saves values for a module's exposed (and
// secret) deployment settings, with an audit row in the same transaction;
// an empty value removes the saved one (the environment's or the default
// applies again); an empty secret keeps the saved secret. Invalid input is
// a *SettingsError and saves nothing. The module uses the new values from
// its next restart.
func (h *Host) SaveSettings(ctx context.Context, module string, values map[string]string, actor string) error {
	spec, ok := h.specs[module]
	if !ok {
		return fmt.Errorf("host: save settings: %w: %s", ErrUnknownModule, module)
	}
	if spec.Settings == nil {
		return fmt.Errorf("host: save settings: module %s has no settings", module)
	}
	se := &SettingsError{Module: module}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		f, ok := spec.Settings.Field(k)
		switch {
		case !ok:
			se.Fields = append(se.Fields, FieldError{Field: k, Message: fmt.Sprintf("module %s has no setting %s", hostkit.Repr(module), hostkit.Repr(k))})
		case !f.Exposed() && !f.Secret:
			se.Fields = append(se.Fields, FieldError{Field: k, Message: fmt.Sprintf("setting %s is set in the environment only (%s)", hostkit.Repr(k), hostkit.SettingEnvName(module, k))})
		}
	}
	if len(se.Fields) > 0 {
		return se
	}
	raw, _, err := h.rawSettings(ctx, spec)
	if err != nil {
		return err
	}
	for k, v := range values {
		f, _ := spec.Settings.Field(k)
		switch {
		case v == "" && f.Secret:
		case v == "":
			delete(raw, k)
		default:
			raw[k] = v
		}
	}
	if _, err := prepareSettings(spec, raw); err != nil {
		return err
	}
	var changed []string
	err = h.store.Write(ctx, func(tx *sql.Tx) error {
		for _, k := range slices.Sorted(maps.Keys(values)) {
			f, _ := spec.Settings.Field(k)
			v := values[k]
			switch {
			case v == "" && f.Secret:
				continue
			case v == "":
				if err := store.DeleteSettingTx(ctx, tx, settingKey(module, k)); err != nil {
					return err
				}
			case f.Secret:
				if err := store.SetSecretSettingTx(ctx, tx, settingKey(module, k), v); err != nil {
					return err
				}
			default:
				if err := store.SetSettingTx(ctx, tx, settingKey(module, k), v); err != nil {
					return err
				}
			}
			changed = append(changed, k)
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{Actor: actor, Action: ActionSettingsSave, Target: module,
			Detail: "changed " + strings.Join(changed, ", ")})
	})
	if err != nil {
		return fmt.Errorf("host: save settings of %s: %w", module, err)
	}
	return nil
}
