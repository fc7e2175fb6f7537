package results

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// readResult is one Read's outcome.
type readResult struct {
	n   int
	err string
}

// readAll runs reads inside one handler invocation and returns their
// outcomes (messages of access errors; "" ok), plus the reader.
func readAll(t *testing.T, e *env, p Publication, reads func(ctx context.Context, f sdk.ScheduledResultFiles) []readResult) ([]readResult, sdk.ScheduledResultFiles) {
	t.Helper()
	b, _ := e.bind(e.svc, "kudos")
	type out struct {
		rs []readResult
		f  sdk.ScheduledResultFiles
	}
	ch := make(chan out, 1)
	e.subscribe(b, p.GuildID, &recorder{fn: func(ctx context.Context, _ sdk.ScheduledResult, f sdk.ScheduledResultFiles) error {
		ch <- out{reads(ctx, f), f}
		return nil
	}})
	e.enqueue(p)
	o := <-ch
	e.waitStatus(p.RunID, StatusAcknowledged)
	return o.rs, o.f
}

func read(ctx context.Context, f sdk.ScheduledResultFiles, id string, max int64) readResult {
	data, err := f.Read(ctx, id, max)
	if err != nil {
		var ae *sdk.ScheduledResultAccessError
		if !errors.As(err, &ae) {
			return readResult{err: "not an access error: " + err.Error()}
		}
		return readResult{err: ae.Message}
	}
	return readResult{n: len(data)}
}

// bigPub is a publication with two attachments: 8 MiB and 5 bytes.
func bigPub(e *env) Publication {
	p := e.pub("run-1", guildA)
	p.Messages[0].Attachments = []sdk.ScheduledResultAttachment{{ID: "big", Filename: "big.bin", SizeBytes: sdk.MaxResultFileBytes}, {ID: "att-1", Filename: "a.txt", SizeBytes: 5}}
	e.prod.files["big"] = bytes.Repeat([]byte{1}, sdk.MaxResultFileBytes)
	e.prod.files["att-1"] = []byte("hello")
	e.prod.files["foreign"] = []byte("not this run's")
	return p
}

// TestReaderBudget: two 8 MiB reads of the same file use the 16 MiB
// budget; the third read fails closed. Limits outside 1..8 MiB fail with
// the validation message.
func TestReaderBudget(t *testing.T) {
	e := newEnv(t)
	rs, _ := readAll(t, e, bigPub(e), func(ctx context.Context, f sdk.ScheduledResultFiles) []readResult {
		return []readResult{
			read(ctx, f, "big", 0),
			read(ctx, f, "big", sdk.MaxResultFileBytes+1),
			read(ctx, f, "big", sdk.MaxResultFileBytes),
			read(ctx, f, "big", sdk.MaxResultFileBytes),
			read(ctx, f, "att-1", 10),
		}
	})
	const limitMsg = "attachment read limit must be between 1 byte and 8 MiB"
	want := []readResult{{err: limitMsg}, {err: limitMsg}, {n: sdk.MaxResultFileBytes}, {n: sdk.MaxResultFileBytes}, {err: MessageFilesClosed}}
	for i := range want {
		if rs[i] != want[i] {
			t.Errorf("read %d = %+v, want %+v", i, rs[i], want[i])
		}
	}
}

// TestReaderRemainingLimit: once the budget left is smaller than a file,
// the file is unavailable (nothing is truncated), a smaller one still
// reads.
func TestReaderRemainingLimit(t *testing.T) {
	e := newEnv(t)
	rs, _ := readAll(t, e, bigPub(e), func(ctx context.Context, f sdk.ScheduledResultFiles) []readResult {
		return []readResult{
			read(ctx, f, "big", sdk.MaxResultFileBytes),
			read(ctx, f, "att-1", 5),
			read(ctx, f, "big", sdk.MaxResultFileBytes),
			read(ctx, f, "att-1", 4),
			read(ctx, f, "att-1", 5),
			read(ctx, f, "foreign", 100),
			read(ctx, f, "missing", 100),
		}
	})
	want := []readResult{{n: sdk.MaxResultFileBytes}, {n: 5}, {err: MessageFileUnavailable}, {err: MessageFileUnavailable}, {n: 5},
		{err: MessageFileUnavailable}, {err: MessageFileUnavailable}}
	for i := range want {
		if rs[i] != want[i] {
			t.Errorf("read %d = %+v, want %+v", i, rs[i], want[i])
		}
	}
}

// TestReaderClosedAfterReturn: the reader a handler kept fails once the
// handler returned.
func TestReaderClosedAfterReturn(t *testing.T) {
	e := newEnv(t)
	_, f := readAll(t, e, bigPub(e), func(ctx context.Context, f sdk.ScheduledResultFiles) []readResult {
		return []readResult{read(ctx, f, "att-1", 5)}
	})
	before := e.prod.reads.Load()
	if r := read(e.ctx, f, "att-1", 5); r.err != MessageFilesClosed {
		t.Fatalf("read after return = %+v", r)
	}
	if e.prod.reads.Load() != before {
		t.Fatal("the producer was asked after the handler returned")
	}
}

// TestReaderAccessRevoked: a read after the owner's access went (mid
// handler) fails with the access detail and never reaches the file.
func TestReaderAccessRevoked(t *testing.T) {
	e := newEnv(t)
	rs, _ := readAll(t, e, bigPub(e), func(ctx context.Context, f sdk.ScheduledResultFiles) []readResult {
		first := read(ctx, f, "att-1", 5)
		e.prod.setDeny(true)
		return []readResult{first, read(ctx, f, "att-1", 5)}
	})
	if rs[0] != (readResult{n: 5}) || rs[1] != (readResult{err: DetailAccess}) {
		t.Fatalf("reads = %+v", rs)
	}
	if n := e.prod.reads.Load(); n != 1 {
		t.Fatalf("producer reads = %d, want 1", n)
	}
}
