package admin

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/tasks"
	"github.com/kimiapp/kimi/web/templates"
)

// Bounds of the files a refused task form keeps: an hour, and per admin
// session what one form may carry (tasks.MaxAttachments files,
// tasks.MaxOutputFileBytes in all) — holding more drops the session's
// oldest files first.
const (
	heldUploadTTL   = time.Hour
	heldUploadFiles = tasks.MaxAttachments
	heldUploadBytes = tasks.MaxOutputFileBytes
)

// heldUploads keeps the uploads of a refused task form in memory, per
// admin session, so the re-rendered form lists them as attached (a browser
// cannot be handed files back) and the next save uses them. A file is
// named by a random token only its session can use; it is forgotten after
// heldUploadTTL (a timer at the next expiry frees the memory; no polling).
// The zero value is ready; now is the clock (time.Now when nil).
type heldUploads struct {
	mu       sync.Mutex
	now      func() time.Time
	sessions map[string][]heldUpload // by admin session ID, oldest first
	timer    *time.Timer
	stopped  bool
}

type heldUpload struct {
	token string
	file  tasks.Attachment
	at    time.Time
}

// heldRef is a held file as the form lists it.
type heldRef struct {
	Token, Name string
	Size        int64
}

func (h *heldUploads) clock() time.Time {
	if h.now != nil {
		return h.now()
	}
	return time.Now()
}

// hold keeps files for session and returns their references, in order.
func (h *heldUploads) hold(session string, files []tasks.Attachment) []heldRef {
	if session == "" || len(files) == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock()
	if h.sessions == nil {
		h.sessions = map[string][]heldUpload{}
	}
	list := h.live(session, now)
	refs := make([]heldRef, 0, len(files))
	for _, f := range files {
		tok := newHeldToken()
		list = append(list, heldUpload{token: tok, file: f, at: now})
		refs = append(refs, heldRef{Token: tok, Name: f.Name, Size: int64(len(f.Data))})
	}
	var total int64
	for _, u := range list {
		total += int64(len(u.file.Data))
	}
	for len(list) > 0 && (len(list) > heldUploadFiles || total > heldUploadBytes) {
		total -= int64(len(list[0].file.Data))
		list = list[1:]
	}
	h.sessions[session] = list
	h.schedule(now)
	// A file dropped again at once (over the bounds) is no reference.
	return slices.DeleteFunc(refs, func(r heldRef) bool {
		return !slices.ContainsFunc(list, func(u heldUpload) bool { return u.token == r.Token })
	})
}

// take returns session's files of tokens (unknown, expired and foreign
// tokens are skipped) with their references, in the tokens' order; they
// stay held until drop.
func (h *heldUploads) take(session string, tokens []string) ([]tasks.Attachment, []heldRef) {
	if session == "" || len(tokens) == 0 {
		return nil, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	list := h.live(session, h.clock())
	var files []tasks.Attachment
	var refs []heldRef
	for _, tok := range tokens {
		i := slices.IndexFunc(list, func(u heldUpload) bool { return u.token == tok })
		if i < 0 || slices.ContainsFunc(refs, func(r heldRef) bool { return r.Token == tok }) {
			continue
		}
		files = append(files, list[i].file)
		refs = append(refs, heldRef{Token: tok, Name: list[i].file.Name, Size: int64(len(list[i].file.Data))})
	}
	return files, refs
}

// drop forgets session's files of tokens.
func (h *heldUploads) drop(session string, tokens ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	list := slices.DeleteFunc(h.sessions[session], func(u heldUpload) bool { return slices.Contains(tokens, u.token) })
	if len(list) == 0 {
		delete(h.sessions, session)
		return
	}
	h.sessions[session] = list
}

// live is session's unexpired files (h.mu held); expired ones are dropped.
func (h *heldUploads) live(session string, now time.Time) []heldUpload {
	list := slices.DeleteFunc(h.sessions[session], func(u heldUpload) bool { return !now.Before(u.at.Add(heldUploadTTL)) })
	if len(list) == 0 {
		delete(h.sessions, session)
	}
	return list
}

// sweep forgets every expired file and arms the timer for the next expiry.
func (h *heldUploads) sweep() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock()
	for s := range h.sessions {
		h.live(s, now)
	}
	h.timer = nil
	h.schedule(now)
}

// schedule arms the timer for the earliest expiry unless one is armed
// (h.mu held). The timer fires no earlier than that expiry, so a sweep
// always frees at least one file.
func (h *heldUploads) schedule(now time.Time) {
	if h.timer != nil || h.stopped {
		return
	}
	var first time.Time
	for _, list := range h.sessions {
		for _, u := range list {
			if first.IsZero() || u.at.Before(first) {
				first = u.at
			}
		}
	}
	if first.IsZero() {
		return
	}
	h.timer = time.AfterFunc(max(first.Add(heldUploadTTL).Sub(now), time.Second), h.sweep)
}

// stop ends the timer and forgets every file (the server's Close).
func (h *heldUploads) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	clear(h.sessions)
}

// bytes is how much the held files take (tests).
func (h *heldUploads) bytes() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var n int64
	for _, list := range h.sessions {
		for _, u := range list {
			n += int64(len(u.file.Data))
		}
	}
	return n
}

func newHeldToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// heldSession is the admin session's ID ("" when none).
func heldSession(c echo.Context) string {
	if sess := sessionOf(c); sess != nil {
		return sess.ID
	}
	return ""
}

// attachHeld sets f.HeldFiles to the session's files f names (those a
// refused save kept) and returns their references.
func (s *Server) attachHeld(c echo.Context, f *form.TaskForm) []heldRef {
	files, refs := s.held.take(heldSession(c), f.Held)
	f.HeldFiles = files
	return refs
}

// keepUploads holds f's uploads after a refusal and returns every file
// the form lists as attached next: those held before, then these.
func (s *Server) keepUploads(c echo.Context, f *form.TaskForm, refs []heldRef) []heldRef {
	sess := heldSession(c)
	tokens := heldTokens(refs)
	for _, r := range s.held.hold(sess, f.Uploads) {
		tokens = append(tokens, r.Token)
	}
	f.Uploads = nil
	_, refs = s.held.take(sess, tokens)
	return refs
}

// dropHeld forgets the held files a save attached.
func (s *Server) dropHeld(c echo.Context, refs []heldRef) {
	if len(refs) > 0 {
		s.held.drop(heldSession(c), heldTokens(refs)...)
	}
}

// removeHeld drops the held file f's remove button names; refs without it.
func (s *Server) removeHeld(c echo.Context, f form.TaskForm, refs []heldRef) []heldRef {
	s.held.drop(heldSession(c), f.RemoveHeld)
	return slices.DeleteFunc(refs, func(r heldRef) bool { return r.Token == f.RemoveHeld })
}

func heldTokens(refs []heldRef) []string {
	tokens := make([]string, len(refs))
	for i, r := range refs {
		tokens[i] = r.Token
	}
	return tokens
}

// heldView is the held files as the form lists them.
func heldView(refs []heldRef) []templates.TaskHeldFile {
	var v []templates.TaskHeldFile
	for _, r := range refs {
		v = append(v, templates.TaskHeldFile{Token: r.Token, Name: r.Name, Size: byteSize(r.Size)})
	}
	return v
}
