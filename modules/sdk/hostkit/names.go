package hostkit

import (
	"strings"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/internal/names"
)

// TablePrefix returns the module's normalized prefix ("-" replaced by "_"),
// used for table names and the module's event namespace.
func TablePrefix(module string) string { return names.TablePrefix(module) }

// ValidTableName reports whether name is a valid logical table name
// (`[a-z][a-z0-9_]{0,62}`).
func ValidTableName(name string) bool { return names.TableNameRE.MatchString(name) }

// TableName returns the quoted physical name `"<prefix>_<name>"` of a
// module's logical table, the value Storage.Table returns. Message for an
// invalid name: "module 'm' table name 'x' is not a valid identifier".
func TableName(module, name string) (string, error) {
	quoted, msg := names.TableName(module, name)
	if msg != "" {
		return "", &sdk.ModuleContractError{Message: msg}
	}
	return quoted, nil
}

// MustTableName is TableName that panics on an invalid table name.
func MustTableName(module, name string) string {
	t, err := TableName(module, name)
	if err != nil {
		panic(err)
	}
	return t
}

// SettingEnvName returns the environment variable for a module setting:
// upper-case "<prefix>_<field>", e.g. REFERENCE_KUDOS_DAILY_LIMIT.
func SettingEnvName(module, field string) string {
	return strings.ToUpper(TablePrefix(module) + "_" + field)
}

// ValidServiceName reports whether name matches
// `[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*`.
func ValidServiceName(name string) bool { return names.ServiceNameRE.MatchString(name) }

// ValidSettingName reports whether name matches `[a-z][a-z0-9_]{0,63}`.
func ValidSettingName(name string) bool { return names.SettingNameRE.MatchString(name) }
