package stmtcache

import (
	"context"
	"database/sql"
	"sync"
)

// poolKey names a statement prepared on a read pool.
type poolKey struct {
	db *sql.DB
	q  string
}

// pooled are the statements OnPool prepared, once per pool and text. A
// pool's statements end with it (database/sql closes them on its
// connections); the few entries of closed pools stay (tests open many).
var pooled sync.Map // poolKey → *sql.Stmt

// OnPool returns q prepared on db (a read pool, safe for concurrent use),
// preparing it at its first successful use: for a read run on every
// request or delivery, whose parsing would cost as much as running it.
func OnPool(ctx context.Context, db *sql.DB, q string) (*sql.Stmt, error) {
	key := poolKey{db, q}
	if st, ok := pooled.Load(key); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if prev, loaded := pooled.LoadOrStore(key, st); loaded {
		_ = st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}
