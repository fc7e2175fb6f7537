package hostkit

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
)

// This file gives the authorizer exact statement boundaries. SQLite's
// authorizer is told of every action a statement's prepare compiles, but
// not where one statement ends and the next begins: a multi-statement
// string (`ALTER …; SELECT sql FROM sqlite_master`) is prepared statement
// by statement inside one driver call, so the top-level SELECT's actions
// look exactly like the nested SELECTs SQLite's own ALTER compiles. A
// StatementConn, once armed with a StatementHook, splits the SQL it is
// given into single statements and runs them one by one, telling the hook
// where each begins and ends.

// StatementHook is told where each statement an armed StatementConn runs
// begins and ends (Confinement implements it).
type StatementHook interface {
	// BeginStatement is called just before one single statement is
	// prepared.
	BeginStatement()
	// EndStatement is called once that statement has been prepared and,
	// for Exec, run (for Query, its first row stepped).
	EndStatement()
}

// sqlToken is a token class of SQLite's sqlite3_complete (complete.c).
type sqlToken uint8

const (
	tkSemi sqlToken = iota
	tkWS
	tkOther
	tkExplain
	tkCreate
	tkTemp
	tkTrigger
	tkEnd
)

// stStart is the state "at the beginning or end of a statement".
const stStart = 1

// completeTrans is complete.c's transition table: states INVALID, START,
// NORMAL, EXPLAIN, CREATE, TRIGGER, SEMI, END by the tokens above. A
// CREATE TRIGGER's body ends only at `; END ;`.
var completeTrans = [8][8]uint8{
	/* INVALID */ {1, 0, 2, 3, 4, 2, 2, 2},
	/* START   */ {1, 1, 2, 3, 4, 2, 2, 2},
	/* NORMAL  */ {1, 2, 2, 2, 2, 2, 2, 2},
	/* EXPLAIN */ {1, 3, 3, 2, 4, 2, 2, 2},
	/* CREATE  */ {1, 4, 2, 2, 2, 4, 5, 2},
	/* TRIGGER */ {6, 5, 5, 5, 5, 5, 5, 5},
	/* SEMI    */ {6, 6, 5, 5, 5, 5, 5, 7},
	/* END     */ {1, 7, 5, 5, 5, 5, 5, 5},
}

// idChar is SQLite's IdChar: letters, digits, '_', '$' and every byte of
// a multi-byte UTF-8 character.
func idChar(c byte) bool {
	return c >= 0x80 || c == '_' || c == '$' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// sqlSpace is sqlite3Isspace. SQLite's tokenizer begins whitespace at
// any of these but '\v' (alone it is an illegal token) and continues it
// through all of them; complete.c never counts '\v'.
func sqlSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// nextToken classifies the token at s[i] and returns the index after it.
// Its extents are those of SQLite's tokenizer (sqlite3GetToken), not only
// of complete.c, wherever the two differ in a way that could hide or
// invent a ';': '\v' after whitespace and a byte-order mark are
// whitespace, and a
// Tcl-style parameter (`$a(…)`, `:a::b`, `@a`, `#a`) is one token that
// may hold a ';' or a quote.
func nextToken(s string, i int) (sqlToken, int) {
	c := s[i]
	switch {
	case c == ';':
		return tkSemi, i + 1
	case c != '\v' && sqlSpace(c):
		j := i + 1
		for j < len(s) && sqlSpace(s[j]) {
			j++
		}
		return tkWS, j
	case c == 0xef && strings.HasPrefix(s[i:], "\xef\xbb\xbf"):
		return tkWS, i + 3
	case c == '/' && strings.HasPrefix(s[i:], "/*"):
		if j := strings.Index(s[i+2:], "*/"); j >= 0 {
			return tkWS, i + 2 + j + 2
		}
		return tkWS, len(s)
	case c == '-' && strings.HasPrefix(s[i:], "--"):
		if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
			return tkWS, i + j + 1
		}
		return tkWS, len(s)
	case c == '[':
		if j := strings.IndexByte(s[i+1:], ']'); j >= 0 {
			return tkOther, i + 1 + j + 1
		}
		return tkOther, len(s)
	case c == '\'' || c == '"' || c == '`':
		// A doubled quote ends one string and begins the next: the same
		// extent as SQLite's escaped quote.
		if j := strings.IndexByte(s[i+1:], c); j >= 0 {
			return tkOther, i + 1 + j + 1
		}
		return tkOther, len(s)
	case c == '$' || c == ':' || c == '@' || c == '#':
		return tkOther, parameterEnd(s, i)
	case !idChar(c):
		return tkOther, i + 1
	}
	j := i + 1
	for j < len(s) && idChar(s[j]) {
		j++
	}
	switch w := s[i:j]; {
	case strings.EqualFold(w, "create"):
		return tkCreate, j
	case strings.EqualFold(w, "trigger"):
		return tkTrigger, j
	case strings.EqualFold(w, "temp"), strings.EqualFold(w, "temporary"):
		return tkTemp, j
	case strings.EqualFold(w, "end"):
		return tkEnd, j
	case strings.EqualFold(w, "explain"):
		return tkExplain, j
	}
	return tkOther, j
}

// parameterEnd is the end of the named parameter at s[i] as SQLite's
// tokenizer reads it: identifier characters, "::" pairs, and after at
// least one identifier character a "(…)" suffix up to ')' or whitespace.
func parameterEnd(s string, i int) int {
	n := 0
	j := i + 1
	for ; j < len(s); j++ {
		c := s[j]
		switch {
		case idChar(c):
			n++
		case c == '(' && n > 0:
			for j++; j < len(s) && !sqlSpace(s[j]) && s[j] != ')'; j++ {
			}
			if j < len(s) && s[j] == ')' {
				j++
			}
			return j
		case c == ':' && j+1 < len(s) && s[j+1] == ':':
			j++
		default:
			return j
		}
	}
	return j
}

// span is one statement's text, query[start:end].
type span struct{ start, end int }

// statementSpans splits query into its statements: each ends at a ';'
// that returns complete.c's machine to START (so a CREATE TRIGGER body's
// semicolons stay inside it), or at the end of the text. Pieces that hold
// only whitespace, comments and semicolons are dropped. SQLite reads a
// string only up to its first NUL byte, so the split does too.
func statementSpans(query string) []span {
	if i := strings.IndexByte(query, 0); i >= 0 {
		query = query[:i]
	}
	var out []span
	state := uint8(0)
	start, content := 0, false
	for i := 0; i < len(query); {
		tok, next := nextToken(query, i)
		state = completeTrans[state][tok]
		if tok != tkWS && tok != tkSemi {
			content = true
		}
		i = next
		if tok == tkSemi && state == stStart {
			if content {
				out = append(out, span{start, i})
			}
			start, content = i, false
		}
	}
	if content {
		out = append(out, span{start, len(query)})
	}
	return out
}

// SplitStatements returns query's single statements, in order, as an
// armed StatementConn runs them.
func SplitStatements(query string) []string {
	spans := statementSpans(query)
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = query[s.start:s.end]
	}
	return out
}

// NewStatementConnector returns a connector whose connections are base's,
// each wrapped in a StatementConn.
func NewStatementConnector(base driver.Connector) driver.Connector {
	return statementConnector{base: base}
}

type statementConnector struct{ base driver.Connector }

// Connect implements driver.Connector.
func (c statementConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &StatementConn{conn: conn}, nil
}

// Driver implements driver.Connector.
func (c statementConnector) Driver() driver.Driver { return c.base.Driver() }

var _ driver.Connector = statementConnector{}

// StatementConn is a driver connection that passes everything to the
// driver's own unless a StatementHook is armed (SetStatementHook, through
// sql.Conn.Raw; see ArmStatements). Armed, ExecContext runs the SQL's
// statements one by one with the same arguments and returns the last one's
// result, QueryContext runs all but the last as Exec and returns the last
// one's rows (the driver, modernc.org/sqlite, does the same with a
// multi-statement string, except that it steps an earlier SELECT only
// once), and PrepareContext refuses more than one statement; the hook is
// told where each statement begins and ends. ResetSession disarms it, so
// a connection back in its pool is never left armed. Unwrap (or
// DriverConn) reaches the driver's connection for its own interfaces.
type StatementConn struct {
	conn driver.Conn
	hook StatementHook
}

var _ interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.SessionResetter
	driver.Validator
	driver.Pinger
} = (*StatementConn)(nil)

// Unwrap returns the driver's own connection.
func (c *StatementConn) Unwrap() driver.Conn { return c.conn }

// SetStatementHook arms h (nil disarms). database/sql serializes a
// connection's calls, so it is called through sql.Conn.Raw.
func (c *StatementConn) SetStatementHook(h StatementHook) { c.hook = h }

// DriverConn returns the driver's own connection under dc, a
// sql.Conn.Raw argument: dc itself, or what a StatementConn (and any
// wrapper under it with an Unwrap() driver.Conn method, such as a
// benchmark's counter) wraps.
func DriverConn(dc any) any {
	for {
		w, ok := dc.(interface{ Unwrap() driver.Conn })
		if !ok {
			return dc
		}
		dc = w.Unwrap()
	}
}

// ArmStatements arms h on conn's StatementConn (nil disarms it); a
// connection that is not one is an error, so a caller that needs
// boundaries never runs without them.
func ArmStatements(conn *sql.Conn, h StatementHook) error {
	return conn.Raw(func(dc any) error {
		w, ok := dc.(*StatementConn)
		if !ok {
			return fmt.Errorf("hostkit: arm statement boundaries: the connection (%T) is not a StatementConn", dc)
		}
		w.SetStatementHook(h)
		return nil
	})
}

// Prepare implements driver.Conn.
func (c *StatementConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// Close implements driver.Conn.
func (c *StatementConn) Close() error { return c.conn.Close() }

// Begin implements driver.Conn (database/sql calls BeginTx).
func (c *StatementConn) Begin() (driver.Tx, error) { return c.conn.Begin() }

// BeginTx implements driver.ConnBeginTx.
func (c *StatementConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if b, ok := c.conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	if opts != (driver.TxOptions{}) {
		return nil, errors.New("hostkit: the driver takes no transaction options")
	}
	return c.conn.Begin()
}

// PrepareContext implements driver.ConnPrepareContext.
func (c *StatementConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if c.hook == nil {
		return c.prepare(ctx, query)
	}
	spans := statementSpans(query)
	if len(spans) != 1 {
		return nil, fmt.Errorf("hostkit: prepare: %d statements in one Prepare; prepare one statement at a time", len(spans))
	}
	c.hook.BeginStatement()
	defer c.hook.EndStatement()
	return c.prepare(ctx, query[spans[0].start:spans[0].end])
}

func (c *StatementConn) prepare(ctx context.Context, query string) (driver.Stmt, error) {
	if p, ok := c.conn.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	return c.conn.Prepare(query)
}

// ExecContext implements driver.ExecerContext.
func (c *StatementConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip // database/sql prepares instead
	}
	if c.hook == nil {
		return e.ExecContext(ctx, query, args)
	}
	var res driver.Result = emptyResult{}
	for _, sp := range statementSpans(query) {
		r, err := c.execOne(ctx, e, query[sp.start:sp.end], args)
		if err != nil {
			return nil, err
		}
		res = r
	}
	return res, nil
}

func (c *StatementConn) execOne(ctx context.Context, e driver.ExecerContext, stmt string, args []driver.NamedValue) (driver.Result, error) {
	c.hook.BeginStatement()
	defer c.hook.EndStatement()
	return e.ExecContext(ctx, stmt, args)
}

// QueryContext implements driver.QueryerContext.
func (c *StatementConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	if c.hook == nil {
		return q.QueryContext(ctx, query, args)
	}
	spans := statementSpans(query)
	if len(spans) == 0 {
		return emptyRows{}, nil
	}
	e, ok := c.conn.(driver.ExecerContext)
	if !ok && len(spans) > 1 {
		return nil, errors.New("hostkit: query: the driver cannot run the statements before the last")
	}
	last := spans[len(spans)-1]
	for _, sp := range spans[:len(spans)-1] {
		if _, err := c.execOne(ctx, e, query[sp.start:sp.end], args); err != nil {
			return nil, err
		}
	}
	c.hook.BeginStatement()
	defer c.hook.EndStatement()
	return q.QueryContext(ctx, query[last.start:last.end], args)
}

// ResetSession implements driver.SessionResetter; it also disarms the hook.
func (c *StatementConn) ResetSession(ctx context.Context) error {
	c.hook = nil
	if r, ok := c.conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

// IsValid implements driver.Validator.
func (c *StatementConn) IsValid() bool {
	if v, ok := c.conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// Ping implements driver.Pinger.
func (c *StatementConn) Ping(ctx context.Context) error {
	if p, ok := c.conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// emptyResult is the result of SQL without a statement.
type emptyResult struct{}

func (emptyResult) LastInsertId() (int64, error) { return 0, nil }
func (emptyResult) RowsAffected() (int64, error) { return 0, nil }

// emptyRows are the rows of SQL without a statement.
type emptyRows struct{}

func (emptyRows) Columns() []string              { return nil }
func (emptyRows) Close() error                   { return nil }
func (emptyRows) Next(dest []driver.Value) error { return io.EOF }
