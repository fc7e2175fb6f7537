package hostkit

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"sort"
	"strings"
)

// ForeignObjects are the schema rows (sqlite_master and
// sqlite_temp_master) that are not a module's own, by database, type and
// name: what a module's migration must leave as it found them.
type ForeignObjects map[string]string

// sqliteCreated are the tables SQLite creates on its own when a module
// uses AUTOINCREMENT or ANALYZE: they may appear in any migration.
var sqliteCreated = map[string]bool{
	"sqlite_sequence": true, "sqlite_stat1": true, "sqlite_stat2": true, "sqlite_stat3": true, "sqlite_stat4": true,
}

// ForeignSchema reads the schema objects that are not the own of the
// module whose table prefix is prefix. An object is its own when its table
// (tbl_name) is `<prefix>_…` and so is its name, or it is SQLite's index
// of that table's UNIQUE or PRIMARY KEY constraint
// (sqlite_autoindex_<table>_N). The renamed name of ALTER TABLE … RENAME
// TO never reaches the authorizer, so a host compares this before and
// after a migration (Changed): a table renamed out of the prefix, into
// another module's, or an object of another's rewritten (a view or trigger
// naming the renamed table) shows as a difference. q is the driver's
// connection (DriverConn under sql.Conn.Raw, with no authorizer), so no
// statement of a goroutine still using the module's transaction runs
// between the host's reads and its decision.
func ForeignSchema(ctx context.Context, q driver.QueryerContext, prefix string) (ForeignObjects, error) {
	c := Confinement{prefix: prefix}
	out := ForeignObjects{}
	for _, db := range []struct{ name, table string }{{"main", "sqlite_master"}, {"temp", "sqlite_temp_master"}} {
		rows, err := q.QueryContext(ctx, `SELECT type, name, tbl_name, coalesce(sql, '') FROM `+db.table, nil)
		if err != nil {
			return nil, fmt.Errorf("hostkit: read the schema: %w", err)
		}
		row := make([]driver.Value, 4)
		for {
			if err := rows.Next(row); err == io.EOF {
				break
			} else if err != nil {
				_ = rows.Close()
				return nil, fmt.Errorf("hostkit: read the schema: %w", err)
			}
			typ, name, table, text := schemaText(row[0]), schemaText(row[1]), schemaText(row[2]), schemaText(row[3])
			own := c.own(table) && (c.own(name) || strings.HasPrefix(name, "sqlite_autoindex_"+table+"_"))
			if own || typ == "table" && sqliteCreated[name] {
				continue
			}
			out[db.name+"\x00"+typ+"\x00"+name] = table + "\x00" + text
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("hostkit: read the schema: %w", err)
		}
	}
	return out, nil
}

// schemaText is a schema column's value as text.
func schemaText(v driver.Value) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return fmt.Sprint(v)
}

// Changed returns nil when after holds exactly before's objects, else an
// error naming the first that appeared, changed or disappeared.
func (before ForeignObjects) Changed(after ForeignObjects) error {
	keys := make([]string, 0, len(before)+len(after))
	for k := range before {
		keys = append(keys, k)
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	// Tables first: a rename's table says more than its indexes.
	rank := map[string]int{"table": 0, "view": 1, "index": 2, "trigger": 3}
	sort.Slice(keys, func(i, j int) bool {
		ti, tj := strings.SplitN(keys[i], "\x00", 3)[1], strings.SplitN(keys[j], "\x00", 3)[1]
		if rank[ti] != rank[tj] {
			return rank[ti] < rank[tj]
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		b, inBefore := before[k]
		a, inAfter := after[k]
		what := ""
		switch {
		case !inBefore:
			what = "appeared"
		case !inAfter:
			what = "disappeared"
		case a != b:
			what = "changed"
		default:
			continue
		}
		parts := strings.SplitN(k, "\x00", 3)
		where := ""
		if parts[0] != "main" {
			where = " in " + parts[0]
		}
		return fmt.Errorf("%s %s%s, which is not the module's own, %s (a table may be renamed only within its prefix)", parts[1], Repr(parts[2]), where, what)
	}
	return nil
}
