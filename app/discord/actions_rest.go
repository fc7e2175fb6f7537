package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"

	"github.com/bwmarrin/discordgo"
)

// restJSON sends one of the actions' REST requests through discordgo, out
// of discordgo's path-keyed buckets. discordgo's helpers (ChannelMessageSend
// and the rest) lock the path's Bucket mutex for the whole request, a plain
// sync.Mutex taken before the request's ctx is even looked at: a second
// request on the same path would queue behind the first while it waits in
// Kimi's transport for a rate limit, and its own ctx could not end that
// wait. Here every call gets a private Bucket, locked as
// RequestWithLockedBucket expects and released by it, never entered in the
// session's Ratelimiter (whose bucket map never forgets a key): nothing
// accumulates, no lock is shared, and every wait is the request's own in
// Kimi's transport, under its ctx. The transport strips the X-RateLimit-*
// headers, so Release learns nothing and the bucket's zero global pointer
// is never touched. out (may be nil) receives the JSON answer. A 429 the
// transport gave up on comes back as a *rateLimited over discordgo's
// RateLimitError, with the transport's view of it (global or not).
func restJSON(ctx context.Context, s *discordgo.Session, method, endpoint string, body, out any, extra ...discordgo.RequestOption) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return fmt.Errorf("discord: encode %s request: %w", method, err)
		}
	}
	return restBody(ctx, s, method, endpoint, "application/json", b, out, extra...)
}

// restBody is restJSON for a body already encoded as contentType (a
// multipart/form-data message with files): the same private locked
// bucket, so the request goes through Kimi's transport and its rate
// limits, UncertainError included.
func restBody(ctx context.Context, s *discordgo.Session, method, endpoint, contentType string, b []byte, out any, extra ...discordgo.RequestOption) error {
	bucket := &discordgo.Bucket{Key: endpoint, Remaining: 1}
	bucket.Lock() // released by RequestWithLockedBucket
	note := &limitNote{}
	ctx = context.WithValue(ctx, limitNoteKey{}, note)
	resp, err := s.RequestWithLockedBucket(method, endpoint, contentType, b, bucket, 0, requestOptions(ctx, extra...)...)
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) {
		retry, global := note.get()
		return &rateLimited{retryAfter: retry, global: global, Err: err}
	}
	if err != nil {
		return err
	}
	if out != nil && len(resp) > 0 {
		if err := json.Unmarshal(resp, out); err != nil {
			return fmt.Errorf("discord: decode %s answer: %w", method, err)
		}
	}
	return nil
}

// withQuery appends q to endpoint.
func withQuery(endpoint string, q url.Values) string {
	if len(q) == 0 {
		return endpoint
	}
	return endpoint + "?" + q.Encode()
}

// stateChannel copies a channel of the session state under the state's
// read lock (nil when the state does not hold it): the state updates a
// channel in place (*c = *update, and thread members spliced in place), so
// its fields are read only under the lock or from a copy.
func stateChannel(s *discordgo.Session, channelID string) *discordgo.Channel {
	c, err := s.State.Channel(channelID)
	if err != nil || c == nil {
		return nil
	}
	s.State.RLock()
	defer s.State.RUnlock()
	cp := *c
	cp.PermissionOverwrites = slices.Clone(c.PermissionOverwrites)
	cp.AvailableTags = slices.Clone(c.AvailableTags)
	cp.AppliedTags = slices.Clone(c.AppliedTags)
	cp.Members = slices.Clone(c.Members)
	cp.Messages = nil
	if c.ThreadMetadata != nil {
		md := *c.ThreadMetadata
		cp.ThreadMetadata = &md
	}
	if c.Member != nil {
		tm := *c.Member
		cp.Member = &tm
	}
	return &cp
}

// stateMember copies a member of the session state under its read lock
// (nil when absent or without its user).
func stateMember(s *discordgo.Session, guildID, userID string) *discordgo.Member {
	m, err := s.State.Member(guildID, userID)
	if err != nil || m == nil {
		return nil
	}
	s.State.RLock()
	defer s.State.RUnlock()
	if m.User == nil {
		return nil
	}
	cp := *m
	cp.Roles = slices.Clone(m.Roles)
	u := *m.User
	cp.User = &u
	return &cp
}
