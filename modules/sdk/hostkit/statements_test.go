package hostkit

import (
	"reflect"
	"testing"
)

// TestSplitStatements: SQL splits where SQLite's parser ends a statement —
// at a ';' outside strings, comments and a CREATE TRIGGER's body — and
// where SQLite's tokenizer reads a ';' or a quote that complete.c's does
// not (a Tcl-style parameter, '\v', a byte-order mark) it follows the
// tokenizer.
func TestSplitStatements(t *testing.T) {
	for _, tt := range []struct {
		name string
		sql  string
		want []string
	}{
		{"one without a semicolon", "SELECT 1", []string{"SELECT 1"}},
		{"two", "SELECT 1; SELECT 2;", []string{"SELECT 1;", " SELECT 2;"}},
		{"empty pieces dropped", " ;; SELECT 1 ;\n-- c\n; /* x */ ", []string{" SELECT 1 ;"}},
		{"only comments", "-- a\n/* b */ ;", []string{}},
		{"strings and identifiers", `SELECT ';', "a;b", [c;d], ` + "`e;f`" + `, 'it''s;'; SELECT 2`,
			[]string{`SELECT ';', "a;b", [c;d], ` + "`e;f`" + `, 'it''s;';`, " SELECT 2"}},
		{"comments", "SELECT 1 -- ;\n; SELECT /* ; */ 2", []string{"SELECT 1 -- ;\n;", " SELECT /* ; */ 2"}},
		{"trigger body", "CREATE TRIGGER m_t AFTER INSERT ON m_a BEGIN UPDATE m_a SET v = 1; DELETE FROM m_a; END; SELECT 1",
			[]string{"CREATE TRIGGER m_t AFTER INSERT ON m_a BEGIN UPDATE m_a SET v = 1; DELETE FROM m_a; END;", " SELECT 1"}},
		{"temp trigger with CASE … END", "create temporary trigger t after insert on a begin select case when 1 then 2 end; end; select 3;",
			[]string{"create temporary trigger t after insert on a begin select case when 1 then 2 end; end;", " select 3;"}},
		{"explain create trigger", "EXPLAIN CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1; END; SELECT 2",
			[]string{"EXPLAIN CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1; END;", " SELECT 2"}},
		{"a table named like a keyword", "CREATE TABLE trigger_log (x); SELECT 1", []string{"CREATE TABLE trigger_log (x);", " SELECT 1"}},
		{"Tcl parameter holding a quote", "ALTER TABLE m_a ADD COLUMN z DEFAULT $a('x);SELECT sql FROM sqlite_master;--'",
			[]string{"ALTER TABLE m_a ADD COLUMN z DEFAULT $a('x);", "SELECT sql FROM sqlite_master;"}},
		{"Tcl parameter holding a semicolon", "SELECT :a(x;y); SELECT 2", []string{"SELECT :a(x;y);", " SELECT 2"}},
		{"parameter with ::", "SELECT @a::b; SELECT 2", []string{"SELECT @a::b;", " SELECT 2"}},
		{"vertical tab in whitespace before TRIGGER", "CREATE \vTRIGGER t AFTER INSERT ON a BEGIN SELECT 1; END; SELECT 2",
			[]string{"CREATE \vTRIGGER t AFTER INSERT ON a BEGIN SELECT 1; END;", " SELECT 2"}},
		{"a lone vertical tab is a token", "CREATE\vTRIGGER t BEGIN SELECT 1; END;", []string{"CREATE\vTRIGGER t BEGIN SELECT 1;", " END;"}},
		{"byte-order mark before END", "CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1;\xef\xbb\xbfEND; SELECT 2",
			[]string{"CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1;\xef\xbb\xbfEND;", " SELECT 2"}},
		{"NUL ends the text", "SELECT 1;\x00SELECT sql FROM sqlite_master", []string{"SELECT 1;"}},
		{"unterminated string", "SELECT 1; SELECT 'a;b", []string{"SELECT 1;", " SELECT 'a;b"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := SplitStatements(tt.sql); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("SplitStatements(%q) = %q, want %q", tt.sql, got, tt.want)
			}
		})
	}
}
