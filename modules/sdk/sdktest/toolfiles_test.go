package sdktest

import (
	"context"
	"errors"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

func TestToolFilesLimitsAndCodes(t *testing.T) {
	ctx := context.Background()
	f := NewFakeToolFiles()
	f.AddAttachment(sdk.ToolAttachment{ID: "a1", Filename: "notes.txt", MediaType: "text/plain"}, []byte("hello"))
	f.AddAttachment(sdk.ToolAttachment{ID: "gone", Filename: "x.png", UnavailableReason: "not admitted"}, nil)
	f.AddWorkspaceFile("docs/readme.md", []byte("# hi"))

	if got := f.Attachments(); len(got) != 2 || got[0].Size != 5 {
		t.Errorf("attachments = %+v", got)
	}
	file, err := f.ReadAttachment(ctx, "a1", 5)
	if err != nil || string(file.Data) != "hello" || file.Filename != "notes.txt" || file.MediaType != "text/plain" {
		t.Errorf("read = %+v, %v", file, err)
	}
	if ws, err := f.ReadWorkspace(ctx, "docs/readme.md", 100); err != nil || string(ws.Data) != "# hi" || ws.Filename != "readme.md" {
		t.Errorf("workspace read = %+v, %v", ws, err)
	}

	tests := []struct {
		name string
		read func() error
		code sdk.FileErrorCode
	}{
		{"too large", func() error { _, err := f.ReadAttachment(ctx, "a1", 4); return err }, sdk.FileTooLarge},
		{"invalid limit", func() error { _, err := f.ReadAttachment(ctx, "a1", 0); return err }, sdk.FileInvalidLimit},
		{"unknown", func() error { _, err := f.ReadAttachment(ctx, "zz", 10); return err }, sdk.FileUnknownAttachment},
		{"unavailable attachment", func() error { _, err := f.ReadAttachment(ctx, "gone", 10); return err }, sdk.FileUnavailable},
		{"missing workspace file", func() error { _, err := f.ReadWorkspace(ctx, "nope.txt", 10); return err }, sdk.FileUnavailable},
		{"traversal", func() error { _, err := f.ReadWorkspace(ctx, "../etc/passwd", 10); return err }, sdk.FileUnavailable},
		{"absolute", func() error { _, err := f.ReadWorkspace(ctx, "/etc/passwd", 10); return err }, sdk.FileUnavailable},
	}
	for _, tt := range tests {
		if err := tt.read(); !errors.Is(err, &sdk.FileAccessError{Code: tt.code}) {
			t.Errorf("%s: %v, want code %s", tt.name, err, tt.code)
		}
	}
	if n := len(f.Reads()); n != 2+len(tests) {
		t.Errorf("reads logged = %d", n)
	}

	f.Expire()
	if _, err := f.ReadAttachment(ctx, "a1", 5); !errors.Is(err, &sdk.FileAccessError{Code: sdk.FileExpired}) {
		t.Errorf("after expiry = %v", err)
	}
}

func TestToolFilesBudgetChargesRepeatedReads(t *testing.T) {
	ctx := context.Background()
	f := NewFakeToolFiles()
	big := make([]byte, 20<<20) // 20 MiB; the budget is 50 MiB
	f.AddAttachment(sdk.ToolAttachment{ID: "big"}, big)
	for i := range 2 {
		if _, err := f.ReadAttachment(ctx, "big", int64(len(big))); err != nil {
			t.Fatalf("read %d: %v", i+1, err)
		}
	}
	if _, err := f.ReadAttachment(ctx, "big", int64(len(big))); !errors.Is(err, &sdk.FileAccessError{Code: sdk.FileBudgetExhausted}) {
		t.Errorf("third read = %v, want budget_exhausted", err)
	}
}
