package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestAuditListFiltersAndPages(t *testing.T) {
	s := migratedStore(t)
	ctx := context.Background()
	rows := []AuditEntry{
		{Actor: "system", Action: "auth.setup", Target: "admin"},
		{Actor: "admin", Action: "auth.login", IP: "10.0.0.1"},
		{Actor: "mallory", Action: "auth.login_failed", IP: "10.0.0.9", Detail: "unknown user"},
		{Actor: "admin", Action: "settings.password", Detail: "password changed"},
		{Actor: "admin", Action: "auth.logout"},
	}
	for _, r := range rows {
		if err := s.Audit(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		f    AuditFilter
		want []string // actions, newest first
	}{
		{"all newest first", AuditFilter{}, []string{"auth.logout", "settings.password", "auth.login_failed", "auth.login", "auth.setup"}},
		{"actor case-insensitive", AuditFilter{Actor: "ADMIN"}, []string{"auth.logout", "settings.password", "auth.login"}},
		{"exact action", AuditFilter{Action: "auth.login"}, []string{"auth.login"}},
		{"action prefix", AuditFilter{Action: "auth."}, []string{"auth.logout", "auth.login_failed", "auth.login", "auth.setup"}},
		{"query in detail", AuditFilter{Query: "UNKNOWN"}, []string{"auth.login_failed"}},
		{"query in target", AuditFilter{Query: "admin"}, []string{"auth.setup"}},
		{"no match", AuditFilter{Actor: "nobody"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, next, err := s.ListAudit(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var actions []string
			for _, e := range got {
				actions = append(actions, e.Action)
			}
			if strings.Join(actions, ",") != strings.Join(tt.want, ",") || next != 0 {
				t.Fatalf("got %v next=%d, want %v", actions, next, tt.want)
			}
		})
	}
	// Paging: 2 per page walks all rows exactly once.
	var seen []string
	var cursor int64
	for page := 0; ; page++ {
		got, next, err := s.ListAudit(ctx, AuditFilter{Limit: 2, Before: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range got {
			seen = append(seen, e.Action)
		}
		if next == 0 {
			break
		}
		cursor = next
		if page > 5 {
			t.Fatal("paging does not terminate")
		}
	}
	if len(seen) != len(rows) {
		t.Fatalf("paging saw %d rows, want %d: %v", len(seen), len(rows), seen)
	}
	actions, err := s.AuditActions(ctx)
	if err != nil || len(actions) != 5 || actions[0] != "auth.login" {
		t.Fatalf("AuditActions = %v %v", actions, err)
	}
}

// TestAuditActions: the filter's action list is every recorded action once,
// in byte order, and empty for an empty log.
func TestAuditActions(t *testing.T) {
	s := migratedStore(t)
	ctx := context.Background()
	if got, err := s.AuditActions(ctx); err != nil || len(got) != 0 {
		t.Fatalf("AuditActions on an empty log = %v, %v; want none", got, err)
	}
	for _, action := range []string{"b.two", "a.one", "b.two", "B.upper", "a.one", "a.one.more", "c"} {
		if err := s.Audit(ctx, AuditEntry{Actor: "admin", Action: action}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.AuditActions(ctx)
	want := []string{"B.upper", "a.one", "a.one.more", "b.two", "c"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("AuditActions = %v, %v; want %v", got, err, want)
	}
}

// TestAuditFiltersUseIndexes: the audit page's actor and exact-action filters
// are answered from an index, not by scanning the whole log, which only
// grows: the actor (case-insensitive) through kimi_audit_log_actor, the action
// through kimi_audit_log_action.
func TestAuditFiltersUseIndexes(t *testing.T) {
	s := migratedStore(t)
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		f     AuditFilter
		index string
	}{
		{"actor", AuditFilter{Actor: "Admin"}, "kimi_audit_log_actor"},
		{"actor on a later page", AuditFilter{Actor: "admin", Before: 100}, "kimi_audit_log_actor"},
		{"exact action", AuditFilter{Action: "auth.login"}, "kimi_audit_log_action"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q, args := auditQuery(tt.f, 50)
			rows, err := s.Reader().QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(plan, "; "); !strings.Contains(got, "INDEX "+tt.index) {
				t.Errorf("plan %q does not use %s", got, tt.index)
			}
		})
	}
}

// BenchmarkAuditActions lists the actions of a 100k-row log, as every audit
// page view does.
func BenchmarkAuditActions(b *testing.B) {
	s := openTest(b, filepath.Join(b.TempDir(), "kimi.db"))
	ctx := context.Background()
	if _, err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	err := s.Write(ctx, func(tx *sql.Tx) error {
		for i := range 100_000 {
			if err := AuditTx(ctx, tx, AuditEntry{Actor: "x", Action: fmt.Sprintf("auth.action_%d", i%12)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if got, err := s.AuditActions(ctx); err != nil || len(got) != 12 {
			b.Fatalf("AuditActions = %d actions, %v", len(got), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/list")
}

func TestAuditValidatesAndBounds(t *testing.T) {
	s := migratedStore(t)
	ctx := context.Background()
	if err := s.Audit(ctx, AuditEntry{Action: "x"}); err == nil {
		t.Fatal("audit without actor accepted")
	}
	if err := s.Audit(ctx, AuditEntry{Actor: "a"}); err == nil {
		t.Fatal("audit without action accepted")
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	long := strings.Repeat("é", 3000)
	if err := s.Audit(ctx, AuditEntry{Actor: "a", Action: "b", Detail: long, At: at}); err != nil {
		t.Fatal(err)
	}
	got, _, _ := s.ListAudit(ctx, AuditFilter{})
	if len(got) != 1 || !got[0].At.Equal(at) {
		t.Fatalf("got %+v", got)
	}
	if len(got[0].Detail) > auditDetailMax || !strings.HasPrefix(long, got[0].Detail) {
		t.Fatalf("detail not clipped on a rune boundary: %d bytes", len(got[0].Detail))
	}
}

// TestAuditRequestAddress: a row written under WithAuditAddress without an
// IP records the request's address; a row's own IP wins; without one it
// stays empty.
func TestAuditRequestAddress(t *testing.T) {
	s := migratedStore(t)
	req := WithAuditAddress(context.Background(), "203.0.113.7")
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		ip     string
		wantIP string
	}{
		{name: "a request's row without an IP gets its address", ctx: req, wantIP: "203.0.113.7"},
		{name: "the row's own IP wins", ctx: req, ip: "198.51.100.2", wantIP: "198.51.100.2"},
		{name: "no request, no address", ctx: context.Background(), wantIP: ""},
		{name: "an empty address adds none", ctx: WithAuditAddress(context.Background(), ""), wantIP: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Audit(tc.ctx, AuditEntry{Actor: "admin", Action: "test.address", Target: tc.name, IP: tc.ip}); err != nil {
				t.Fatal(err)
			}
			got, _, err := s.ListAudit(context.Background(), AuditFilter{Query: tc.name, Limit: 1})
			if err != nil || len(got) != 1 {
				t.Fatalf("ListAudit = %v, %v", got, err)
			}
			if got[0].IP != tc.wantIP {
				t.Errorf("IP = %q, want %q", got[0].IP, tc.wantIP)
			}
		})
	}
}
