package sdktest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// Ports of the SDK's tests/test_scheduled_results.py (2.4).

// result mirrors the Python test's result(): one published message with one
// attachment, "file".
func result() sdk.ScheduledResult {
	return sdk.ScheduledResult{
		NotificationID: "notification", Subscription: "reports", TaskID: "task", RunID: "run",
		Revision: 3, GuildID: 100, OwnerID: 10,
		PublishedAt: time.Unix(1000, 0), ExpiresAt: time.Unix(2000, 0),
		Messages: []sdk.ScheduledResultMessage{{
			Message:     sdk.MessageRef{GuildID: 100, ChannelID: 300, MessageID: 900},
			Content:     "Published",
			Attachments: []sdk.ScheduledResultAttachment{{ID: "file", Filename: "result.txt", SizeBytes: 3}},
		}},
		Outcome: sdk.ResultCompleted,
	}
}

// test_result_is_immutable_and_permissions_must_be_named. Go values are
// copied, so immutability is a property of passing a value; what remains
// is the permission rule.
func TestResultPermissionsMustBeNamed(t *testing.T) {
	spec := func(names []string) sdk.Spec {
		return sdk.Spec{Name: "reports", APIVersion: sdk.APIVersion, Create: func(sdk.LoadContext) (sdk.Module, error) { return nil, nil },
			Permissions: sdk.Permissions{ScheduledResults: names}}
	}
	if err := spec([]string{"reports"}).Validate(); err != nil {
		t.Errorf("valid names: %v", err)
	}
	for _, names := range [][]string{{"Upper Case"}, {"reports", "reports"}, {""}} {
		err := spec(names).Validate()
		if !errors.Is(err, sdk.ErrContract) || err.Error() != "Kimi module 'reports' has an invalid declaration: scheduled-result subscription names must be unique and valid" {
			t.Errorf("names %q: %v", names, err)
		}
	}
	// A handler receives its own copy: changing it cannot alter a retry.
	fake := NewFakeScheduledResults([]string{"reports"}, nil)
	var owners []uint64
	_ = fake.Subscribe(context.Background(), "reports", 100, func(_ context.Context, r sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error {
		owners = append(owners, r.OwnerID)
		r.OwnerID = 99
		return errors.New("retry")
	})
	original := result()
	_ = fake.Deliver(context.Background(), original, DeliverOptions{})
	_ = fake.Deliver(context.Background(), original, DeliverOptions{})
	if !slices.Equal(owners, []uint64{10, 10}) {
		t.Errorf("owners seen = %v", owners)
	}

	// Nor can changing the messages it holds (slices share memory unless
	// the fake copies them, as the frozen tuples of the reference forbid).
	var contents, attachmentIDs []string
	_ = fake.Subscribe(context.Background(), "reports", 100, func(_ context.Context, r sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error {
		contents = append(contents, r.Messages[0].Content)
		attachmentIDs = append(attachmentIDs, r.Messages[0].Attachments[0].ID)
		r.Messages[0].Content = "tampered"
		r.Messages[0].Attachments[0].ID = "tampered"
		return errors.New("retry")
	})
	_ = fake.Deliver(context.Background(), original, DeliverOptions{})
	_ = fake.Deliver(context.Background(), original, DeliverOptions{})
	if !slices.Equal(contents, []string{"Published", "Published"}) || !slices.Equal(attachmentIDs, []string{"file", "file"}) {
		t.Errorf("a retry saw the handler's changes: contents %v, attachment ids %v", contents, attachmentIDs)
	}
	if original.Messages[0].Content != "Published" || original.Messages[0].Attachments[0].ID != "file" {
		t.Errorf("the handler changed the caller's result: %+v", original.Messages[0])
	}
}

// test_fake_retry_acknowledgement_preview_and_file_lifetime
func TestFakeRetryAcknowledgementPreviewAndFileLifetime(t *testing.T) {
	ctx := context.Background()
	fake := NewFakeScheduledResults([]string{"reports"}, nil)
	var attempts []string
	var readers []sdk.ScheduledResultFiles
	handler := func(ctx context.Context, n sdk.ScheduledResult, files sdk.ScheduledResultFiles) error {
		attempts = append(attempts, n.NotificationID)
		readers = append(readers, files)
		if data, err := files.Read(ctx, "file", sdk.MaxResultFileBytes); err != nil || string(data) != "abc" {
			t.Errorf("read file = %q, %v", data, err)
		}
		var access *sdk.ScheduledResultAccessError
		if _, err := files.Read(ctx, "not published", sdk.MaxResultFileBytes); !errors.As(err, &access) {
			t.Errorf("read of an unpublished attachment = %v", err)
		}
		if _, err := files.Read(ctx, "file", 2); !errors.As(err, &access) {
			t.Errorf("read over max_bytes = %v", err)
		}
		if len(attempts) == 1 {
			return errors.New("retry me")
		}
		return nil
	}
	if err := fake.Subscribe(ctx, "reports", 100, handler); err != nil {
		t.Fatal(err)
	}

	if err := fake.Deliver(ctx, result(), DeliverOptions{Preview: true}); err != nil || len(attempts) != 0 {
		t.Fatalf("preview delivered: %v %v", err, attempts)
	}
	files := map[string][]byte{"file": []byte("abc"), "not published": []byte("private")}
	if err := fake.Deliver(ctx, result(), DeliverOptions{Files: files}); err == nil || err.Error() != "retry me" {
		t.Fatalf("first delivery = %v, want the handler's error", err)
	}
	if len(fake.AcknowledgedIDs()) != 0 {
		t.Error("a failed delivery was acknowledged")
	}
	if err := fake.Deliver(ctx, result(), DeliverOptions{Files: files}); err != nil {
		t.Fatal(err)
	}
	if err := fake.Deliver(ctx, result(), DeliverOptions{Files: files}); err != nil {
		t.Fatal(err)
	}

	if !slices.Equal(attempts, []string{"notification", "notification"}) || !slices.Equal(fake.Attempts(), attempts) {
		t.Errorf("attempts = %v, want the same id twice and no call once acknowledged", attempts)
	}
	if !slices.Equal(fake.AcknowledgedIDs(), []string{"notification"}) || !fake.Acknowledged("notification") {
		t.Errorf("acknowledged = %v", fake.AcknowledgedIDs())
	}
	for i, reader := range readers {
		var access *sdk.ScheduledResultAccessError
		if _, err := reader.Read(ctx, "file", sdk.MaxResultFileBytes); !errors.As(err, &access) {
			t.Errorf("reader %d after its handler returned: %v", i, err)
		}
	}
}

// test_fake_permission_and_guild_scope
func TestFakePermissionAndGuildScope(t *testing.T) {
	ctx := context.Background()
	fake := NewFakeScheduledResults([]string{"reports"}, func(guild uint64) bool { return guild == 100 })
	handler := func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error { return nil }
	var access *sdk.ScheduledResultAccessError

	if err := fake.Subscribe(ctx, "other", 100, handler); !errors.As(err, &access) || err.Error() != "Undeclared scheduled-result subscription" {
		t.Errorf("undeclared name = %v", err)
	}
	if err := fake.Subscribe(ctx, "reports", 0, handler); !errors.Is(err, sdk.ErrContract) || err.Error() != "scheduled-result subscriptions require a positive guild ID" {
		t.Errorf("guild 0 = %v", err)
	}
	if err := fake.Subscribe(ctx, "Bad-Name", 100, handler); err == nil || err.Error() != "scheduled-result names use 1-64 lowercase letters, digits or _" {
		t.Errorf("invalid name = %v", err)
	}
	if err := fake.Subscribe(ctx, "reports", 200, handler); err != nil {
		t.Fatal(err)
	}
	inactive := result()
	inactive.GuildID = 200
	if err := fake.Deliver(ctx, inactive, DeliverOptions{}); !errors.As(err, &access) || err.Error() != "Subscriber unavailable in this guild" {
		t.Errorf("inactive guild = %v", err)
	}
	if err := fake.Subscribe(ctx, "reports", 100, handler); err != nil {
		t.Fatal(err)
	}
	if err := fake.Unsubscribe(ctx, "reports", 100); err != nil {
		t.Fatal(err)
	}
	if err := fake.Deliver(ctx, result(), DeliverOptions{}); !errors.As(err, &access) {
		t.Errorf("after unsubscribe = %v", err)
	}
	if err := fake.Unsubscribe(ctx, "other", 100); !errors.As(err, &access) {
		t.Errorf("unsubscribe of an undeclared name = %v", err)
	}
	if got := fake.Subscriptions(); !slices.Equal(got, []ResultSubscription{{"reports", 200}}) {
		t.Errorf("subscriptions = %v", got)
	}
}

// Reads are limited to 8 MiB each and 16 MiB per invocation, repeated
// reads included, and the limit itself is validated.
func TestResultFilesReadBudget(t *testing.T) {
	ctx := context.Background()
	six := make([]byte, 6<<20)
	reader := NewFakeScheduledResultFiles(map[string][]byte{"six": six, "nine": make([]byte, 9<<20)}, nil)

	for _, limit := range []int64{0, -1, sdk.MaxResultFileBytes + 1} {
		_, err := reader.Read(ctx, "six", limit)
		if err == nil || err.Error() != "attachment read limit must be between 1 byte and 8 MiB" {
			t.Errorf("limit %d: %v", limit, err)
		}
	}
	if _, err := reader.Read(ctx, "nine", sdk.MaxResultFileBytes); err == nil {
		t.Error("a 9 MiB attachment was read under the 8 MiB cap")
	}
	for i := range 2 {
		if _, err := reader.Read(ctx, "six", sdk.MaxResultFileBytes); err != nil {
			t.Fatalf("read %d: %v", i+1, err)
		}
	}
	if reader.Remaining() != 4<<20 {
		t.Errorf("remaining = %d", reader.Remaining())
	}
	if _, err := reader.Read(ctx, "six", sdk.MaxResultFileBytes); err == nil || err.Error() != "Result file unavailable or read limit exceeded" {
		t.Errorf("third read past the 16 MiB budget = %v", err)
	}
}

// A handler that panics is a failed delivery (retried), and access is
// re-checked on every read: unsubscribing mid-handler kills the reader.
func TestResultDeliveryPanicsAndRevokedAccess(t *testing.T) {
	ctx := context.Background()
	fake := NewFakeScheduledResults([]string{"reports"}, nil)
	_ = fake.Subscribe(ctx, "reports", 100, func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error { panic("kaboom") })
	if err := fake.Deliver(ctx, result(), DeliverOptions{}); err == nil || err.Error() != "panic: kaboom" {
		t.Errorf("panicking handler = %v", err)
	}
	if fake.Acknowledged("notification") {
		t.Error("a panicking delivery was acknowledged")
	}

	_ = fake.Subscribe(ctx, "reports", 100, func(ctx context.Context, _ sdk.ScheduledResult, files sdk.ScheduledResultFiles) error {
		if err := fake.Unsubscribe(ctx, "reports", 100); err != nil {
			return err
		}
		_, err := files.Read(ctx, "file", 10)
		return err
	})
	var access *sdk.ScheduledResultAccessError
	if err := fake.Deliver(ctx, result(), DeliverOptions{Files: map[string][]byte{"file": []byte("abc")}}); !errors.As(err, &access) {
		t.Errorf("read after losing the subscription = %v", err)
	}
	if err := fake.Subscribe(ctx, "reports", 100, nil); !errors.Is(err, sdk.ErrContract) {
		t.Errorf("nil handler = %v", err)
	}
	fake.ForgetAcknowledgements()
	if len(fake.AcknowledgedIDs()) != 0 {
		t.Error("acknowledgements survived ForgetAcknowledgements")
	}
}
