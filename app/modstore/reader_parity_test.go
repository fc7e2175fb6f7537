package modstore

import (
	"context"
	"database/sql"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/sdktest"
)

// TestReaderRefusalsMatchSdktest: a module's read through its Reader is
// answered alike by the host and by sdktest's storage fake — allowed on
// its own table, refused with the same error text on a core table, another
// module's, SQLite's schema, its raw pages and dbstat — so a module's unit
// test sees the refusal the host will give.
func TestReaderRefusalsMatchSdktest(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	fake := sdktest.OpenStorage(t, "kudos")
	if err := fake.Migrate(ctx, []sdk.Migration{createTable("points")}); err != nil {
		t.Fatal(err)
	}
	// Both databases hold the same objects: other_data (the fixture's on
	// the host) and a core kimi_x, each with a row.
	for _, q := range []string{`CREATE TABLE other_data (id INTEGER PRIMARY KEY, v TEXT)`, `CREATE TABLE kimi_x (v)`, `INSERT INTO kimi_x VALUES ('secret')`, `INSERT INTO kudos_points (v) VALUES ('a')`} {
		if _, err := fake.Writer().ExecContext(ctx, q); err != nil {
			t.Fatalf("fake fixture %s: %v", q, err)
		}
	}
	for _, q := range []string{`CREATE TABLE kimi_x (v)`, `INSERT INTO kimi_x VALUES ('secret')`, `INSERT INTO kudos_points (v) VALUES ('a')`} {
		if _, err := f.st.Writer().ExecContext(ctx, q); err != nil {
			t.Fatalf("host fixture %s: %v", q, err)
		}
	}
	read := func(db *sql.DB, q string) error {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
		}
		return rows.Err()
	}
	for _, tt := range []struct {
		name, query string
		ok          bool
	}{
		{"own table", `SELECT v FROM kudos_points`, true},
		{"own table counted", `SELECT count(*) FROM kudos_points`, true},
		{"kimi_x", `SELECT v FROM kimi_x`, false},
		{"kimi_x counted", `SELECT count(*) FROM kimi_x`, false},
		{"other_x", `SELECT v FROM other_data`, false},
		{"other_x counted", `SELECT count(*) FROM other_data`, false},
		{"sqlite_master", `SELECT sql FROM sqlite_master`, false},
		{"sqlite_dbpage", `SELECT data FROM sqlite_dbpage`, false},
		{"dbstat", `SELECT count(*) FROM dbstat`, false},
		{"pragma of a core table", `PRAGMA table_info(kimi_x)`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			host, fakeErr := read(f.kudos.Reader(), tt.query), read(fake.Reader(), tt.query)
			if tt.ok {
				if host != nil || fakeErr != nil {
					t.Fatalf("own read refused: host %v, sdktest %v", host, fakeErr)
				}
				return
			}
			if host == nil || fakeErr == nil {
				t.Fatalf("allowed: host %v, sdktest %v", host, fakeErr)
			}
			if host.Error() != fakeErr.Error() {
				t.Fatalf("refusals differ:\nhost    %v\nsdktest %v", host, fakeErr)
			}
		})
	}
}
