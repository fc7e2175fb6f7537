package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/pressly/goose/v3"
)

// ErrSchemaMismatch reports a database whose tables, indexes, triggers or
// views differ from what the core migrations produce at its version: an
// added trigger, a table replaced by a view, a missing table. Such a
// database is refused by restore, doctor and start-up; the *SchemaError
// names every object.
var ErrSchemaMismatch = errors.New("store: schema does not match the migrations")

// SchemaError lists every schema object of a database that is extra,
// missing or different from what the core migrations produce at the
// database's version. errors.Is(err, ErrSchemaMismatch) is true.
type SchemaError struct {
	// Version is the database's schema version the objects were compared at.
	Version int64
	// Problems are operator-facing lines such as
	// `unexpected trigger "keep_sessions" on table kimi_sessions`.
	Problems []string
}

// Error names every problem on one line.
func (e *SchemaError) Error() string {
	return "store: schema: " + strings.Join(e.Problems, "; ")
}

// Is makes errors.Is(err, ErrSchemaMismatch) true.
func (e *SchemaError) Is(target error) bool { return target == ErrSchemaMismatch }

var _ error = (*SchemaError)(nil)

// SchemaObject is one row of sqlite_schema: a table, index, trigger or view.
type SchemaObject struct {
	Type    string // table, index, trigger or view
	Name    string
	Table   string // tbl_name: the table an index or trigger belongs to
	SQL     string // the CREATE statement, normalized (normalizeSQL)
	Present bool   // SQL is not NULL in sqlite_schema
}

func (o SchemaObject) key() string { return o.Type + "\x00" + o.Name }

// describe names the object as an operator reads it: `trigger "x" on table t`.
func (o SchemaObject) describe() string {
	s := fmt.Sprintf("%s %q", o.Type, o.Name)
	if (o.Type == "index" || o.Type == "trigger") && o.Table != "" {
		s += " on table " + o.Table
	}
	return s
}

// queryer is what the schema check needs of a connection: plain reads.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ queryer = (*sql.DB)(nil)
	_ queryer = (*sql.Tx)(nil)
	_ queryer = (*sql.Conn)(nil)
)

// internalObject reports the objects SQLite creates by itself: the
// AUTOINCREMENT ledger, ANALYZE statistics and the indexes behind UNIQUE and
// PRIMARY KEY constraints (which have no SQL of their own). They follow from
// the compared tables, so they are not compared.
func internalObject(o SchemaObject) bool {
	switch {
	case o.Type == "table" && (o.Name == "sqlite_sequence" || strings.HasPrefix(o.Name, "sqlite_stat")):
		return true
	case o.Type == "index" && strings.HasPrefix(o.Name, "sqlite_autoindex_") && !o.Present:
		return true
	}
	return false
}

// readSchema lists the schema objects of the database behind q. It reads
// sqlite_schema only: no user table, view or trigger is touched.
func readSchema(ctx context.Context, q queryer) ([]SchemaObject, error) {
	rows, err := q.QueryContext(ctx, `SELECT type, name, tbl_name, sql FROM sqlite_schema`)
	if err != nil {
		return nil, fmt.Errorf("store: read schema: %w", err)
	}
	defer rows.Close()
	var out []SchemaObject
	for rows.Next() {
		var o SchemaObject
		var text sql.NullString
		if err := rows.Scan(&o.Type, &o.Name, &o.Table, &text); err != nil {
			return nil, fmt.Errorf("store: read schema: %w", err)
		}
		o.SQL, o.Present = normalizeSQL(text.String), text.Valid
		if !internalObject(o) {
			out = append(out, o)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read schema: %w", err)
	}
	return out, nil
}

// normalizeSQL makes two spellings of one CREATE statement compare equal:
// comments are dropped and every run of whitespace outside quotes becomes
// one space. Quoted strings and identifiers are kept byte for byte.
func normalizeSQL(s string) string {
	var b strings.Builder
	space := false
	emit := func(c byte) {
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteByte(c)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '"' || c == '`' || c == '[':
			end := c
			if c == '[' {
				end = ']'
			}
			emit(c)
			for i++; i < len(s); i++ {
				b.WriteByte(s[i])
				if s[i] == end {
					// A doubled quote is an escaped quote, not the end.
					if end != ']' && i+1 < len(s) && s[i+1] == end {
						i++
						b.WriteByte(s[i])
						continue
					}
					break
				}
			}
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			space = true
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			if j := strings.Index(s[i+2:], "*/"); j >= 0 {
				i += j + 3
			} else {
				i = len(s)
			}
			space = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			space = true
		default:
			emit(c)
		}
	}
	return b.String()
}

// compareSchema lists the differences between got (a database's schema) and
// want (what the migrations produce). optional objects of want may be absent
// from got. allow, when not nil, accepts an object of got that want lacks:
// it is the hook for module tables (`<module>_<table>`, created by module
// migrations with their own ledger): verifySchema passes moduleObject.
func compareSchema(got, want []SchemaObject, optional map[string]bool, allow func(SchemaObject) bool) []string {
	wantBy := make(map[string]SchemaObject, len(want))
	for _, o := range want {
		wantBy[o.key()] = o
	}
	gotBy := make(map[string]SchemaObject, len(got))
	var problems []string
	for _, o := range got {
		gotBy[o.key()] = o
		w, ok := wantBy[o.key()]
		switch {
		case !ok && allow != nil && allow(o):
		case !ok:
			problems = append(problems, "unexpected "+o.describe())
		case o.Table != w.Table || o.SQL != w.SQL || o.Present != w.Present:
			problems = append(problems, o.describe()+" differs from the migrations' definition")
		}
	}
	for _, w := range want {
		if _, ok := gotBy[w.key()]; !ok && !optional[w.key()] {
			problems = append(problems, "missing "+w.describe())
		}
	}
	sort.Strings(problems)
	return problems
}

// expectedSchemas caches, per migration set and version, the schema the
// core migrations produce, so each process migrates a scratch database at
// most once per version it meets.
var expectedSchemas sync.Map // string (digest/version) -> []SchemaObject

// migrationsDigest identifies the migrations up to version (their names and
// contents), so a cached expected schema never outlives the files it was
// built from.
func migrationsDigest(fsys fs.FS, version int64) (string, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return "", fmt.Errorf("store: list migrations: %w", err)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		v, err := goose.NumericComponent(n)
		if err != nil {
			return "", fmt.Errorf("store: migration %s: %w", n, err)
		}
		if v > version {
			continue
		}
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return "", fmt.Errorf("store: read migration %s: %w", n, err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
		h.Write(b)
	}
	return fmt.Sprintf("%s/%d", hex.EncodeToString(h.Sum(nil)), version), nil
}

// knownVersion reports whether version is 0 or the version of a migration
// this binary has.
func knownVersion(fsys fs.FS, version int64) (bool, error) {
	if version == 0 {
		return true, nil
	}
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return false, fmt.Errorf("store: list migrations: %w", err)
	}
	for _, n := range names {
		if v, err := goose.NumericComponent(n); err == nil && v == version {
			return true, nil
		}
	}
	return false, nil
}

// expectedSchema is the schema the core migrations produce at version: a
// scratch database in a temporary directory is migrated to that version and
// its sqlite_schema read (then cached). At version 0 it holds only goose's
// version table.
func expectedSchema(ctx context.Context, version int64) ([]SchemaObject, error) {
	fsys := migrationsFS()
	key, err := migrationsDigest(fsys, version)
	if err != nil {
		return nil, err
	}
	if v, ok := expectedSchemas.Load(key); ok {
		return v.([]SchemaObject), nil
	}
	dir, err := os.MkdirTemp("", "kimi-schema-")
	if err != nil {
		return nil, fmt.Errorf("store: expected schema: %w", err)
	}
	defer os.RemoveAll(dir)
	// A throwaway file: no fsync, journal in memory.
	db, err := sql.Open("sqlite", fileURI(filepath.Join(dir, "scratch.db"))+"?_pragma=synchronous(OFF)&_pragma=journal_mode(MEMORY)")
	if err != nil {
		return nil, fmt.Errorf("store: expected schema: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	p, err := goose.NewProvider(goose.DialectSQLite3, db, fsys,
		goose.WithTableName(versionTable), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, fmt.Errorf("store: expected schema: %w", err)
	}
	// GetDBVersion creates goose's version table, as every goose run does.
	if _, err := p.GetDBVersion(ctx); err != nil {
		return nil, fmt.Errorf("store: expected schema: %w", err)
	}
	if version > 0 {
		if _, err := p.UpTo(ctx, version); err != nil {
			return nil, fmt.Errorf("store: expected schema at version %d: %w", version, err)
		}
	}
	want, err := readSchema(ctx, db)
	if err != nil {
		return nil, err
	}
	expectedSchemas.Store(key, want)
	return want, nil
}

// verifySchema compares the schema of the database behind q with what the
// core migrations produce at the database's version and returns that
// version. It runs no statement that could fire a trigger or evaluate a
// view: it reads sqlite_schema, and goose's version table only once that
// table is known to be goose's own.
//
// A database newer than this binary cannot be judged: verifySchema returns
// its version and no error, and the caller refuses it as too new.
func verifySchema(ctx context.Context, q queryer) (int64, error) {
	got, err := readSchema(ctx, q)
	if err != nil {
		return 0, err
	}
	base, err := expectedSchema(ctx, 0)
	if err != nil {
		return 0, err
	}
	var gooseGot, gooseWant *SchemaObject
	for i := range got {
		if got[i].Name == versionTable {
			gooseGot = &got[i]
		}
	}
	for i := range base {
		if base[i].Name == versionTable {
			gooseWant = &base[i]
		}
	}
	if gooseWant == nil {
		return 0, errors.New("store: expected schema: goose created no version table")
	}
	var version int64
	if gooseGot != nil {
		if gooseGot.key() != gooseWant.key() || gooseGot.SQL != gooseWant.SQL {
			// Reading a view or an altered table could run anything.
			return 0, &SchemaError{Problems: []string{gooseGot.describe() + " is not goose's version table"}}
		}
		if version, err = dbVersion(ctx, q); err != nil {
			return 0, err
		}
	}
	latest, err := latestVersion()
	if err != nil {
		return version, err
	}
	if version > latest {
		return version, nil
	}
	if ok, err := knownVersion(migrationsFS(), version); err != nil {
		return version, err
	} else if !ok {
		return version, &SchemaError{Version: version, Problems: []string{
			fmt.Sprintf("schema version %d is not a migration this binary knows", version)}}
	}
	want, err := expectedSchema(ctx, version)
	if err != nil {
		return version, err
	}
	// A database that was opened but never migrated has no version table yet.
	optional := map[string]bool{}
	if version == 0 {
		optional[gooseWant.key()] = true
	}
	if problems := compareSchema(got, want, optional, moduleObject); len(problems) > 0 {
		return version, &SchemaError{Version: version, Problems: problems}
	}
	return version, nil
}
