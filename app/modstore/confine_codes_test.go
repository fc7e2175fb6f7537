package modstore

import (
	"testing"

	"modernc.org/sqlite"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// TestConfinementSpeaksTheDriversCodes: hostkit's action codes (which it
// numbers itself, importing no driver) are the driver's, and its core
// prefix is the store's.
func TestConfinementSpeaksTheDriversCodes(t *testing.T) {
	for _, tt := range []struct {
		name   string
		kit    hostkit.SQLiteAction
		driver sqlite.AuthorizerActionCode
	}{
		{"CreateIndex", hostkit.ActionCreateIndex, sqlite.AuthCreateIndex},
		{"CreateTable", hostkit.ActionCreateTable, sqlite.AuthCreateTable},
		{"CreateTempIndex", hostkit.ActionCreateTempIndex, sqlite.AuthCreateTempIndex},
		{"CreateTempTable", hostkit.ActionCreateTempTable, sqlite.AuthCreateTempTable},
		{"CreateTempTrigger", hostkit.ActionCreateTempTrigger, sqlite.AuthCreateTempTrigger},
		{"CreateTempView", hostkit.ActionCreateTempView, sqlite.AuthCreateTempView},
		{"CreateTrigger", hostkit.ActionCreateTrigger, sqlite.AuthCreateTrigger},
		{"CreateView", hostkit.ActionCreateView, sqlite.AuthCreateView},
		{"Delete", hostkit.ActionDelete, sqlite.AuthDelete},
		{"DropIndex", hostkit.ActionDropIndex, sqlite.AuthDropIndex},
		{"DropTable", hostkit.ActionDropTable, sqlite.AuthDropTable},
		{"DropTempIndex", hostkit.ActionDropTempIndex, sqlite.AuthDropTempIndex},
		{"DropTempTable", hostkit.ActionDropTempTable, sqlite.AuthDropTempTable},
		{"DropTempTrigger", hostkit.ActionDropTempTrigger, sqlite.AuthDropTempTrigger},
		{"DropTempView", hostkit.ActionDropTempView, sqlite.AuthDropTempView},
		{"DropTrigger", hostkit.ActionDropTrigger, sqlite.AuthDropTrigger},
		{"DropView", hostkit.ActionDropView, sqlite.AuthDropView},
		{"Insert", hostkit.ActionInsert, sqlite.AuthInsert},
		{"Pragma", hostkit.ActionPragma, sqlite.AuthPragma},
		{"Read", hostkit.ActionRead, sqlite.AuthRead},
		{"Select", hostkit.ActionSelect, sqlite.AuthSelect},
		{"Transaction", hostkit.ActionTransaction, sqlite.AuthTransaction},
		{"Update", hostkit.ActionUpdate, sqlite.AuthUpdate},
		{"Attach", hostkit.ActionAttach, sqlite.AuthAttach},
		{"Detach", hostkit.ActionDetach, sqlite.AuthDetach},
		{"AlterTable", hostkit.ActionAlterTable, sqlite.AuthAlterTable},
		{"Reindex", hostkit.ActionReindex, sqlite.AuthReindex},
		{"Analyze", hostkit.ActionAnalyze, sqlite.AuthAnalyze},
		{"CreateVTable", hostkit.ActionCreateVTable, sqlite.AuthCreateVTable},
		{"DropVTable", hostkit.ActionDropVTable, sqlite.AuthDropVTable},
		{"Function", hostkit.ActionFunction, sqlite.AuthFunction},
		{"Savepoint", hostkit.ActionSavepoint, sqlite.AuthSavepoint},
		{"Recursive", hostkit.ActionRecursive, sqlite.AuthRecursive},
	} {
		if int32(tt.kit) != int32(tt.driver) {
			t.Errorf("%s: hostkit %d, driver %d", tt.name, tt.kit, tt.driver)
		}
	}
	if hostkit.CoreTablePrefix != store.ReservedTablePrefix {
		t.Errorf("hostkit.CoreTablePrefix = %q, store.ReservedTablePrefix = %q", hostkit.CoreTablePrefix, store.ReservedTablePrefix)
	}
}
