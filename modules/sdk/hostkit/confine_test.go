package hostkit

import (
	"reflect"
	"testing"
)

// TestConfinementAlterWindow: the ALTER window opens only for an ALTER of
// an own table in main that is the first action of a delimited statement,
// allows the schema reads and updates SQLite's ALTER compiles, and closes
// at EndStatement and BeginStatement; without boundaries ALTER is refused.
func TestConfinementAlterWindow(t *testing.T) {
	type call struct {
		action         SQLiteAction
		a1, a2, dbName string
	}
	alter := call{ActionAlterTable, "main", "m_a", ""}
	schemaRead := call{ActionRead, "sqlite_master", "sql", "main"}
	schemaUpdate := call{ActionUpdate, "sqlite_master", "sql", "main"}
	tempRead := call{ActionRead, "sqlite_temp_master", "sql", "temp"}
	seqUpdate := call{ActionUpdate, "sqlite_sequence", "name", "main"}
	const begin, end = SQLiteAction(-1), SQLiteAction(-2)
	for _, tt := range []struct {
		name  string
		calls []call
		want  []bool // per call that is not a boundary
	}{
		{"ALTER and its nested actions", []call{{action: begin}, alter, {ActionSelect, "", "", ""}, {ActionFunction, "", "sqlite_rename_column", ""}, schemaRead, schemaUpdate, tempRead,
			{ActionUpdate, "sqlite_temp_master", "sql", "temp"}, seqUpdate, {ActionRead, "sqlite_sequence", "name", "main"}, {action: end}},
			[]bool{true, true, true, true, true, true, true, true, true}},
		{"DROP COLUMN names its column", []call{{action: begin}, {ActionAlterTable, "main", "m_a", "w"}, schemaRead, {action: end}}, []bool{true, true}},
		{"without boundaries", []call{alter, schemaRead}, []bool{false, false}},
		{"not the statement's first action", []call{{action: begin}, {ActionSelect, "", "", ""}, alter, schemaRead}, []bool{true, false, false}},
		{"the next statement", []call{{action: begin}, alter, {action: end}, {action: begin}, {ActionSelect, "", "", ""}, schemaRead}, []bool{true, true, false}},
		{"after the statement, undelimited (a re-prepare)", []call{{action: begin}, alter, {action: end}, schemaRead}, []bool{true, false}},
		{"another module's table", []call{{action: begin}, {ActionAlterTable, "main", "o_a", ""}, schemaRead}, []bool{false, false}},
		{"a core table", []call{{action: begin}, {ActionAlterTable, "main", "kimi_settings", ""}}, []bool{false}},
		{"another database", []call{{action: begin}, {ActionAlterTable, "temp", "m_a", ""}}, []bool{false}},
		{"nothing else of sqlite's inside", []call{{action: begin}, alter, {ActionDelete, "sqlite_sequence", "", "main"}, {ActionRead, "sqlite_sequence", "seq", "main"},
			{ActionUpdate, "sqlite_temp_master", "name", "temp"}, {ActionRead, "kimi_settings", "value", "main"}, {ActionFunction, "", "load_extension", ""}, {ActionPragma, "writable_schema", "", ""}},
			[]bool{true, false, false, false, false, false, false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := NewConfinement("m", true, nil, nil)
			var got []bool
			for _, k := range tt.calls {
				switch k.action {
				case begin:
					c.BeginStatement()
				case end:
					c.EndStatement()
				default:
					got = append(got, c.Allow(k.action, k.a1, k.a2, k.dbName, ""))
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("decisions %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("a reader never alters", func(t *testing.T) {
		c := NewConfinement("m", false, nil, nil)
		c.BeginStatement()
		if c.Allow(ActionAlterTable, "main", "m_a", "", "") {
			t.Fatal("the reader's confinement allowed ALTER TABLE")
		}
	})
}
