// Package fulldisk makes a real Kimi database answer SQLITE_FULL ("database
// or disk is full") as it does when its filesystem is full, without root or
// a small filesystem: it caps the writer connection's PRAGMA max_page_count
// at the file's size and fills the audit log, the table nearly every admin
// write appends to, until SQLite refuses another row. Tests use it.
package fulldisk

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kimiapp/kimi/app/store"
)

// maxFillRows bounds each fill pass, so a cap that did not take fails
// instead of filling forever.
const maxFillRows = 200000

// Fill caps st's database at its current size and fills the audit log's last
// pages, so the next write that needs a page fails with store.ErrDiskFull.
// The filler rows bypass Store.Write, so st's WriteHealth is untouched.
func Fill(ctx context.Context, st *store.Store) error {
	w := st.Writer()
	var pages int64
	if err := w.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		return fmt.Errorf("fulldisk: page count: %w", err)
	}
	if _, err := w.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		return fmt.Errorf("fulldisk: cap pages: %w", err)
	}
	// Large rows first (they take the free pages), then ever smaller ones
	// (they take the room left in the last pages).
	for _, size := range []int{4000, 1000, 200, 40, 1} {
		detail := strings.Repeat("f", size)
		for i := 0; ; i++ {
			if i == maxFillRows {
				return fmt.Errorf("fulldisk: fill: %d rows of %d bytes and still not full", i, size)
			}
			_, err := w.ExecContext(ctx, `INSERT INTO kimi_audit_log (at_ms, actor, action, detail) VALUES (0, '', 'fulldisk.fill', ?)`, detail)
			if errors.Is(store.Classify(err), store.ErrDiskFull) {
				break
			}
			if err != nil {
				return fmt.Errorf("fulldisk: fill: %w", err)
			}
		}
	}
	return nil
}

// Free lifts the cap Fill set, as freeing space on the disk would.
func Free(ctx context.Context, st *store.Store) error {
	if _, err := st.Writer().ExecContext(ctx, "PRAGMA max_page_count = 1073741823"); err != nil {
		return fmt.Errorf("fulldisk: free: %w", err)
	}
	return nil
}
