package modstore

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"

	"modernc.org/sqlite"

	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// setAuthorizer installs fn (nil removes it) on conn's physical connection.
// A failure to remove marks the connection bad, so database/sql discards it
// instead of handing a fail-closed authorizer to core writes.
func setAuthorizer(conn *sql.Conn, fn sqlite.AuthorizerFn) error {
	return conn.Raw(func(dc any) error {
		r, ok := hostkit.DriverConn(dc).(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("the SQLite driver offers no authorizer")
		}
		if err := r.RegisterAuthorizer(fn); err != nil {
			if fn == nil {
				return fmt.Errorf("remove authorizer: %w: %w", err, driver.ErrBadConn)
			}
			return fmt.Errorf("install authorizer: %w", err)
		}
		return nil
	})
}

// confined is the authorizer of a module whose prefix is prefix:
// hostkit's Confinement (the one sdktest's storage installs too), adapted
// to the driver's callback. hostRollback, once set, lets the host's own
// ROLLBACK through on the writer.
func confined(prefix string, write bool, existing func(string) bool, hostRollback *atomic.Bool) sqlite.AuthorizerFn {
	return authorizer(newConfinement(prefix, write, existing, hostRollback))
}

// newConfinement is confined's Confinement, for a caller that also arms
// it as the connection's statement hook (a migration).
func newConfinement(prefix string, write bool, existing func(string) bool, hostRollback *atomic.Bool) *hostkit.Confinement {
	var rolling func() bool
	if hostRollback != nil {
		rolling = hostRollback.Load
	}
	return hostkit.NewConfinement(prefix, write, existing, rolling)
}

// authorizer adapts c to the driver's callback.
func authorizer(c *hostkit.Confinement) sqlite.AuthorizerFn {
	return func(action sqlite.AuthorizerActionCode, a1, a2, dbName, trigger string) sqlite.AuthorizerReturnCode {
		if c.Allow(hostkit.SQLiteAction(action), a1, a2, dbName, trigger) {
			return sqlite.AuthorizerOK
		}
		return sqlite.AuthorizerDeny
	}
}
