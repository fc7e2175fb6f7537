package sdktest

import (
	"bytes"
	"context"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// ToolFileRead is one read recorded by a FakeToolFiles: Kind is
// "attachment" or "workspace", Ref the id or relative path.
type ToolFileRead struct {
	Kind     string
	Ref      string
	MaxBytes int64
	Err      error
}

// FakeToolFiles is an sdk.ToolFiles over in-memory attachments and
// workspace files, with the host's limits: a positive limit
// (invalid_limit), no truncation (too_large), a per-invocation budget of
// sdk.MaxToolFileBudget returned bytes, repeated reads charged again
// (budget_exhausted), unknown ids (unknown_attachment), missing or unsafe
// workspace paths and unavailable attachments (unavailable), and expiry
// once Expire is called — as the host does when the handler returns.
type FakeToolFiles struct {
	mu          sync.Mutex
	attachments []sdk.ToolAttachment
	data        map[string][]byte
	workspace   map[string][]byte
	remaining   int64
	expired     bool
	reads       []ToolFileRead
}

var _ sdk.ToolFiles = (*FakeToolFiles)(nil)

// NewFakeToolFiles returns files with nothing admitted.
func NewFakeToolFiles() *FakeToolFiles {
	return &FakeToolFiles{data: map[string][]byte{}, workspace: map[string][]byte{}, remaining: sdk.MaxToolFileBudget}
}

// AddAttachment admits an attachment with its bytes; Size is set from data.
func (f *FakeToolFiles) AddAttachment(a sdk.ToolAttachment, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a.Size = int64(len(data))
	f.attachments = append(f.attachments, a)
	f.data[a.ID] = bytes.Clone(data)
}

// AddWorkspaceFile stores a caller-owned workspace file at a relative path.
func (f *FakeToolFiles) AddWorkspaceFile(relativePath string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.workspace[relativePath] = bytes.Clone(data)
}

// Expire ends the invocation: every later read fails with code expired.
func (f *FakeToolFiles) Expire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expired = true
}

// Reads returns every read attempted, oldest first.
func (f *FakeToolFiles) Reads() []ToolFileRead {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reads)
}

// Attachments lists the admitted attachments.
func (f *FakeToolFiles) Attachments() []sdk.ToolAttachment {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.attachments)
}

// ReadAttachment reads an admitted attachment.
func (f *FakeToolFiles) ReadAttachment(ctx context.Context, id string, maxBytes int64) (sdk.ToolFile, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	file, err := f.readAttachment(id, maxBytes)
	f.reads = append(f.reads, ToolFileRead{Kind: "attachment", Ref: id, MaxBytes: maxBytes, Err: err})
	return file, err
}

func (f *FakeToolFiles) readAttachment(id string, maxBytes int64) (sdk.ToolFile, error) {
	if err := f.precheck(maxBytes); err != nil {
		return sdk.ToolFile{}, err
	}
	i := slices.IndexFunc(f.attachments, func(a sdk.ToolAttachment) bool { return a.ID == id })
	if i < 0 {
		return sdk.ToolFile{}, fileErr(sdk.FileUnknownAttachment, "unknown attachment "+hostkit.Repr(id))
	}
	a := f.attachments[i]
	if a.UnavailableReason != "" {
		return sdk.ToolFile{}, fileErr(sdk.FileUnavailable, a.UnavailableReason)
	}
	return f.charge(a.Filename, a.MediaType, f.data[id], maxBytes)
}

// ReadWorkspace reads a workspace file by a clean relative path.
func (f *FakeToolFiles) ReadWorkspace(ctx context.Context, relativePath string, maxBytes int64) (sdk.ToolFile, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	file, err := f.readWorkspace(relativePath, maxBytes)
	f.reads = append(f.reads, ToolFileRead{Kind: "workspace", Ref: relativePath, MaxBytes: maxBytes, Err: err})
	return file, err
}

func (f *FakeToolFiles) readWorkspace(relativePath string, maxBytes int64) (sdk.ToolFile, error) {
	if err := f.precheck(maxBytes); err != nil {
		return sdk.ToolFile{}, err
	}
	clean := path.Clean(relativePath)
	if relativePath == "" || path.IsAbs(relativePath) || clean == ".." || strings.HasPrefix(clean, "../") {
		return sdk.ToolFile{}, fileErr(sdk.FileUnavailable, "workspace path is outside the workspace")
	}
	data, ok := f.workspace[clean]
	if !ok {
		return sdk.ToolFile{}, fileErr(sdk.FileUnavailable, "workspace file "+hostkit.Repr(relativePath)+" is unavailable")
	}
	return f.charge(path.Base(clean), "application/octet-stream", data, maxBytes)
}

func (f *FakeToolFiles) precheck(maxBytes int64) error {
	if f.expired {
		return fileErr(sdk.FileExpired, "tool files expired when the tool call ended")
	}
	return hostkit.ValidateFileReadLimit(maxBytes)
}

func (f *FakeToolFiles) charge(name, mediaType string, data []byte, maxBytes int64) (sdk.ToolFile, error) {
	size := int64(len(data))
	if size > maxBytes {
		return sdk.ToolFile{}, fileErr(sdk.FileTooLarge, "file is larger than max_bytes")
	}
	if size > f.remaining {
		return sdk.ToolFile{}, fileErr(sdk.FileBudgetExhausted, "the file read budget of this tool call is exhausted")
	}
	f.remaining -= size
	return sdk.ToolFile{Filename: name, MediaType: mediaType, Data: bytes.Clone(data)}, nil
}

func fileErr(code sdk.FileErrorCode, msg string) *sdk.FileAccessError {
	return &sdk.FileAccessError{Code: code, Message: msg}
}
