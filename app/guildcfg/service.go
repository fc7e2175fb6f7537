// Package guildcfg owns Kimi's runtime configuration documents: a guild's
// server setup (guild:<id>), per-channel fragments (channel:<id>) and each
// module's per-guild settings (guild:<id>:<module>), with the original
// host's texts, rules and messages (reference/kimi-agent-host.md §2.10,
// §4.1, §7) kept in SQLite instead of files.
//
// Every document has a revision (the sha256 of its bytes; an absent one has
// the revision of the empty text) and a full history. Writes are
// compare-and-swap on the revision the writer read and commit in one
// transaction with their history and audit rows. After each commit the
// Service swaps in a new immutable snapshot, so the hot-path questions
// (Active, ModuleSettings, ModuleEnabled, Resolve) are answered from memory
// without locks, allocation or the database, and then tells subscribers
// what changed. Document serves the current revision of recently read
// documents, parsed, from a bounded cache that every write path updates
// under the same lock (doccache.go).
//
// The Service must be the only writer of the documents tables while it
// runs (a restore replaces the database with the appliance stopped).
package guildcfg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Audit actions of document writes.
const (
	// ActionDocumentSave is a saved document (a new revision).
	ActionDocumentSave = "guild.document.save"
	// ActionDocumentRevert is a document set back to a past revision
	// (itself a new revision).
	ActionDocumentRevert = "guild.document.revert"
)

// ActorKind says who wrote a revision.
type ActorKind string

// Actor kinds.
const (
	ActorAdmin    ActorKind = "admin"    // an admin-UI user; Name is the username
	ActorProposal ActorKind = "proposal" // an approved proposal; Name is its id
	ActorCLI      ActorKind = "cli"      // the command line; Name is optional
)

// Actor is who writes a document.
type Actor struct {
	Kind ActorKind
	Name string
	IP   string // the client address of an admin-UI request, for the audit row
}

// AuditName is the actor as the audit log and history show it: the
// username, "proposal:<id>", or "cli".
func (a Actor) AuditName() string {
	switch a.Kind {
	case ActorProposal:
		return "proposal:" + a.Name
	case ActorCLI:
		if a.Name != "" {
			return "cli:" + a.Name
		}
		return "cli"
	}
	return a.Name
}

func (a Actor) validate() error {
	switch a.Kind {
	case ActorAdmin, ActorProposal:
		if a.Name == "" {
			return fmt.Errorf("guildcfg: %s actor needs a name", a.Kind)
		}
	case ActorCLI:
	default:
		return fmt.Errorf("guildcfg: unknown actor kind %q", a.Kind)
	}
	return nil
}

// Options configures New.
type Options struct {
	// Modules are the specs of the modules the host knows; those with a
	// GuildSettingsSchema get guild:<id>:<module> documents.
	Modules []sdk.Spec
	// Trust holds the deployment's trust lists and owner.
	Trust TrustSettings
	// Logger receives the Service's messages; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Service reads and writes configuration documents and answers the
// activation and trust questions from its snapshot. Safe for concurrent use.
type Service struct {
	db    DB
	log   *slog.Logger
	now   func() time.Time
	trust TrustSettings
	specs map[string]sdk.Spec

	// mu serializes writers so snapshots are published in commit order.
	mu   sync.Mutex
	snap atomic.Pointer[snapshot]
	// docs caches the documents Document read, parsed; every write path
	// updates it under mu.
	docs *docCache

	subMu  sync.Mutex
	subs   map[*subscriber]struct{}
	closed bool
}

var _ DB = (*store.Store)(nil)

// New loads every stored document into the first snapshot.
func New(ctx context.Context, db DB, opts Options) (*Service, error) {
	s := &Service{
		db:    db,
		log:   opts.Logger,
		now:   opts.Now,
		trust: cloneTrust(opts.Trust),
		specs: map[string]sdk.Spec{},
		subs:  map[*subscriber]struct{}{},
		docs:  newDocCache(),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	for _, spec := range opts.Modules {
		if _, dup := s.specs[spec.Name]; dup {
			return nil, fmt.Errorf("guildcfg: module %q is listed twice", spec.Name)
		}
		if spec.GuildSettings != nil {
			if err := spec.GuildSettings.ValidateSchema(spec.Name); err != nil {
				return nil, fmt.Errorf("guildcfg: load module %s: %w", spec.Name, err)
			}
		}
		s.specs[spec.Name] = spec
	}
	if err := s.Reload(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func cloneTrust(t TrustSettings) TrustSettings {
	return TrustSettings{
		StaffUserIDs:   slices.Clone(t.StaffUserIDs),
		StaffRoleIDs:   slices.Clone(t.StaffRoleIDs),
		RegularRoleIDs: slices.Clone(t.RegularRoleIDs),
		OwnerUserID:    t.OwnerUserID,
	}
}

// Reload rebuilds the snapshot from the database. New calls it; nothing
// else needs to, since every write through the Service updates the snapshot.
func (s *Service) Reload(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	docs, err := readAllDocuments(ctx, s.db.Reader())
	if err != nil {
		return err
	}
	next := s.emptySnapshot()
	states := map[uint64]*guildState{}
	state := func(id uint64) *guildState {
		g := states[id]
		if g == nil {
			g = &guildState{id: id, modules: map[string]sdk.GuildSettingsSnapshot{}}
			states[id] = g
		}
		return g
	}
	for _, d := range docs {
		t, err := ParseTarget(d.target)
		if err != nil {
			s.log.Warn("skipping a stored document with an invalid target", "target", d.target)
			continue
		}
		switch t.Kind {
		case KindGuild:
			applyGuildDocument(state(t.GuildID), d.content)
		case KindChannel:
			applyChannelDocument(next.channels, t.ChannelID, d.content, false)
		case KindGuildModule:
			schema, ok := next.schemas[t.Module]
			if !ok {
				continue // a module this build does not have: kept, not served
			}
			ms, _ := EvaluateModuleDocument(schema, d.content, true)
			state(t.GuildID).modules[t.Module] = ms
		}
	}
	for _, g := range states {
		next.place(g)
	}
	s.docs.reset()
	s.snap.Store(next)
	return nil
}

func (s *Service) emptySnapshot() *snapshot {
	specs := make([]sdk.Spec, 0, len(s.specs))
	for _, spec := range s.specs {
		specs = append(specs, spec)
	}
	return newSnapshot(specs)
}

// Active reports whether the bot serves the guild: its server-setup
// document is valid and says bot_active: true, and no disable_guild module
// has invalid settings there. It reads the snapshot only and never
// allocates.
func (s *Service) Active(guildID uint64) bool {
	g := s.snap.Load().guilds[guildID]
	return g != nil && g.active
}

// ModuleSettings returns a module's settings in a guild (its defaults when
// the guild has no document for it) and false for a module without a
// GuildSettingsSchema. The snapshot is shared: treat it as immutable. It
// never allocates.
func (s *Service) ModuleSettings(guildID uint64, module string) (sdk.GuildSettingsSnapshot, bool) {
	snap := s.snap.Load()
	return snap.settings(snap.guilds[guildID], module)
}

// ModuleEnabled is the module's guild predicate: the guild is active and
// the module's settings there are valid (a disable_module module with
// invalid settings is off in that guild only). A compiled-in module without
// a GuildSettingsSchema has nothing to be invalid, so it is on wherever the
// guild is active (as sdktest's FakeGuildSettings.IsEnabled says); an
// unknown module is off.
func (s *Service) ModuleEnabled(guildID uint64, module string) bool {
	snap := s.snap.Load()
	g := snap.guilds[guildID]
	if g == nil || !g.active {
		return false
	}
	if ms, ok := snap.settings(g, module); ok {
		return ms.Valid
	}
	spec, known := s.specs[module]
	return known && spec.GuildSettings == nil
}

// GuildIDs lists the active guilds, sorted.
func (s *Service) GuildIDs() []uint64 {
	snap := s.snap.Load()
	var out []uint64
	for id, g := range snap.guilds {
		if g.active {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Schema returns a module's guild-settings schema (for a generated form).
func (s *Service) Schema(module string) (sdk.GuildSettingsSchema, bool) {
	schema, ok := s.snap.Load().schemas[module]
	return schema, ok
}

// SchemaModules lists the modules that have guild settings, sorted.
func (s *Service) SchemaModules() []string { return slices.Clone(s.snap.Load().order) }

// GuildSummary is one row of the guild list.
type GuildSummary struct {
	GuildID uint64
	// HasDocument says whether a server-setup document is stored.
	HasDocument bool
	// Valid says the server-setup document passes validation.
	Valid bool
	// BotActive is the document's bot_active.
	BotActive bool
	// Active is the outcome: served by the bot.
	Active bool
	// StaffUsers and StaffRoles count the guild's own staff entries (the
	// deployment's global lists come on top).
	StaffUsers, StaffRoles int
	// InvalidModules are the modules whose settings here are invalid;
	// BlockedBy the disable_guild ones among them (they make the guild
	// inactive).
	InvalidModules []string
	BlockedBy      []string
	// Revision is the server-setup document's revision.
	Revision string
}

// List returns every guild that has a document, sorted by id, from the
// snapshot.
func (s *Service) List(ctx context.Context) ([]GuildSummary, error) {
	snap := s.snap.Load()
	out := make([]GuildSummary, 0, len(snap.guilds))
	for _, g := range snap.guilds {
		out = append(out, summaryOf(g))
	}
	slices.SortFunc(out, func(a, b GuildSummary) int {
		switch {
		case a.GuildID < b.GuildID:
			return -1
		case a.GuildID > b.GuildID:
			return 1
		}
		return 0
	})
	return out, nil
}

// Summary is one guild's row of List, from the snapshot, without building
// the others; false for a guild that has no document of any kind (a guild
// with only module settings has a row, HasDocument false).
func (s *Service) Summary(guildID uint64) (GuildSummary, bool) {
	g := s.snap.Load().guilds[guildID]
	if g == nil {
		return GuildSummary{GuildID: guildID}, false
	}
	return summaryOf(g), true
}

func summaryOf(g *guildState) GuildSummary {
	rev := g.revision
	if !g.hasDoc {
		rev = EmptyRevision
	}
	return GuildSummary{
		GuildID: g.id, HasDocument: g.hasDoc, Valid: g.valid, BotActive: g.config.BotActive, Active: g.active,
		StaffUsers: len(g.config.StaffUserIDs), StaffRoles: len(g.config.StaffRoleIDs),
		InvalidModules: slices.Clone(g.invalidModules), BlockedBy: slices.Clone(g.blockedBy), Revision: rev,
	}
}

// Document is a document as stored, with its parsed view.
type Document struct {
	Target Target
	// Exists is false for a document never written (Text "", Revision
	// EmptyRevision).
	Exists    bool
	Text      string
	Revision  string
	UpdatedAt time.Time
	UpdatedBy string
	// Guild is the parsed server setup (guild targets with a valid text).
	Guild *GuildConfig
	// Frontmatter is the stored text's parsed frontmatter (nil for a
	// document never written or a text that does not parse).
	Frontmatter *Frontmatter
	// Comments reports whether the frontmatter of a guild target's text
	// holds YAML comments (FrontmatterHasComments).
	Comments bool
	// Settings is the module's evaluated settings (guild-module targets).
	Settings *sdk.GuildSettingsSnapshot
	// Problems are what is wrong with the stored text now (a module's
	// schema may have changed since it was written).
	Problems []FieldError
	// Warnings name tools the text blocks or pins that no module of this
	// build declares: kept (modules come and go), but worth a look.
	Warnings []FieldError
}

// ShortRevision is the revision as guild-module documents show it.
func (d Document) ShortRevision() string { return ShortRevision(d.Revision) }

// Document reads a document. An unknown module is a *TargetError. The
// current revision of a recently read or written document comes from the
// Service's cache, parsed once per revision: the Document, and what its
// Guild, Settings, Frontmatter and Problems hold, are shared, so treat
// them as read-only.
func (s *Service) Document(ctx context.Context, target Target) (Document, error) {
	key := target.String()
	if err := s.checkTargetKey(target, key); err != nil {
		return Document{}, err
	}
	doc, ok, gen := s.docs.get(key)
	if ok {
		return doc, nil
	}
	d, exists, err := readDocument(ctx, s.db.Reader(), key)
	if err != nil {
		return Document{}, err
	}
	doc = s.view(target, d, exists)
	s.docs.offer(key, doc, gen)
	return doc, nil
}

func (s *Service) view(target Target, d storedDocument, exists bool) Document {
	doc := Document{Target: target, Exists: exists, Text: d.content, Revision: EmptyRevision}
	if exists {
		doc.Revision, doc.UpdatedAt, doc.UpdatedBy = d.revision, d.updatedAt, d.updatedBy
		if fm, err := ParseFrontmatter(d.content); err == nil {
			doc.Frontmatter = &fm
		}
	}
	switch target.Kind {
	case KindGuild:
		if exists {
			cfg, err := ParseGuildDocument(d.content)
			if err == nil {
				doc.Guild = &cfg
			}
			doc.Problems = problemsOf(err)
			doc.Comments = FrontmatterHasComments(d.content)
		}
	case KindGuildModule:
		schema := *s.specs[target.Module].GuildSettings
		ms, problems := EvaluateModuleDocument(schema, d.content, exists)
		doc.Settings, doc.Problems = &ms, problems
	case KindChannel:
		if exists {
			_, err := ParseChannelDocument(d.content)
			doc.Problems = problemsOf(err)
		}
	}
	if exists && target.Kind != KindGuildModule {
		doc.Warnings = s.ToolWarnings(target, d.content)
	}
	return doc
}

// checkTarget refuses a zero target and a guild-module target of a module
// that is unknown or has no guild settings.
func (s *Service) checkTarget(t Target) error { return s.checkTargetKey(t, t.String()) }

// checkTargetKey is checkTarget given t.String().
func (s *Service) checkTargetKey(t Target, key string) error {
	if _, err := ParseTarget(key); err != nil {
		return err
	}
	if t.Kind != KindGuildModule {
		return nil
	}
	spec, ok := s.specs[t.Module]
	if !ok {
		return &TargetError{Target: t.String(), Message: "unknown module " + hostkit.Repr(t.Module)}
	}
	if spec.GuildSettings == nil {
		return &TargetError{Target: t.String(), Message: "module " + hostkit.Repr(t.Module) + " has no guild settings"}
	}
	return nil
}

// Validate checks text as the target's document would be checked by Write,
// without storing anything. A refusal is a *ValidationError.
func (s *Service) Validate(target Target, text string) error {
	if err := s.checkTarget(target); err != nil {
		return err
	}
	var err error
	switch target.Kind {
	case KindGuild:
		_, err = ParseGuildDocument(text)
	case KindChannel:
		_, err = ParseChannelDocument(text)
	case KindGuildModule:
		if _, problems := EvaluateModuleDocument(*s.specs[target.Module].GuildSettings, text, true); len(problems) > 0 {
			err = invalid("", joinMessages(problems), problems)
		}
	}
	var verr *ValidationError
	if errors.As(err, &verr) {
		verr.Target = target.String()
	}
	return err
}

// Write stores text as the target's new revision if the document's current
// revision is still expectedRevision (Document's Revision;
// EmptyRevision for a document never written). It commits the document,
// its history row and an ActionDocumentSave audit row in one transaction,
// then updates the snapshot and notifies subscribers. Refusals: a
// *TargetError, a *ValidationError (nothing stored), a *ConflictError.
// Writing the current text again changes nothing and records nothing.
func (s *Service) Write(ctx context.Context, target Target, text, expectedRevision string, actor Actor) (Document, error) {
	return s.write(ctx, target, text, expectedRevision, actor, 0)
}

// Revert writes the text of history entry historyID back as a new revision
// (compare-and-swap on expectedRevision like Write, audited as
// ActionDocumentRevert). The old text must pass today's validation.
func (s *Service) Revert(ctx context.Context, target Target, historyID int64, expectedRevision string, actor Actor) (Document, error) {
	if err := s.checkTarget(target); err != nil {
		return Document{}, err
	}
	h, err := readHistoryRow(ctx, s.db.Reader(), target.String(), historyID)
	if err != nil {
		return Document{}, err
	}
	return s.write(ctx, target, h.content, expectedRevision, actor, h.id)
}

func (s *Service) write(ctx context.Context, target Target, text, expected string, actor Actor, revertOf int64) (Document, error) {
	if err := actor.validate(); err != nil {
		return Document{}, err
	}
	if err := s.Validate(target, text); err != nil {
		return Document{}, err
	}
	key := target.String()
	newRev := Revision(text)
	now := s.now()

	s.mu.Lock()
	defer s.mu.Unlock()
	var stored storedDocument
	changed := false
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		cur, exists, err := readDocument(ctx, tx, key)
		if err != nil {
			return err
		}
		curRev := EmptyRevision
		if exists {
			curRev = cur.revision
		}
		if expected != curRev {
			return &ConflictError{Target: key, Expected: expected, Current: s.view(target, cur, exists)}
		}
		if exists && cur.content == text {
			stored = cur
			return nil
		}
		action := "save"
		if revertOf > 0 {
			action = "revert"
		}
		id, err := insertHistory(ctx, tx, historyRow{
			target: key, at: now, actorKind: actor.Kind, actor: actor.AuditName(), action: action,
			revertedFrom: revertOf, beforeRevision: curRev, afterRevision: newRev, content: text,
		})
		if err != nil {
			return err
		}
		stored = storedDocument{target: key, kind: target.Kind, content: text, revision: newRev, updatedAt: now.UTC().Truncate(time.Millisecond), updatedBy: actor.AuditName()}
		if err := writeDocument(ctx, tx, stored); err != nil {
			return err
		}
		detail := fmt.Sprintf("revision %s -> %s", ShortRevision(curRev), ShortRevision(newRev))
		if revertOf > 0 {
			detail += fmt.Sprintf(" (back to history entry %d)", revertOf)
		}
		detail += fmt.Sprintf(", history entry %d", id)
		changed = true
		entry := store.AuditEntry{
			At: now, Actor: actor.AuditName(), Action: ActionDocumentSave, Target: key, Detail: detail, IP: actor.IP,
		}
		if revertOf > 0 {
			entry.Action = ActionDocumentRevert
		}
		return store.AuditTx(ctx, tx, entry)
	})
	if err != nil {
		// Whatever the transaction did, the next read goes to the database.
		s.docs.drop(key)
		var conflict *ConflictError
		var verr *ValidationError
		if errors.As(err, &conflict) || errors.As(err, &verr) {
			return Document{}, err
		}
		return Document{}, fmt.Errorf("guildcfg: write %s: %w", key, err)
	}
	// The cache holds the new revision before any subscriber is told of
	// it, so a subscriber that reads the document reads what it was told.
	doc := s.view(target, stored, true)
	s.docs.set(key, doc)
	if changed {
		s.publish(target, text, newRev)
	}
	return doc, nil
}

// publish swaps in the snapshot with the committed document and queues the
// change for every subscriber. Called with s.mu held, so snapshots and
// notifications follow commit order.
func (s *Service) publish(target Target, text, revision string) {
	cur := s.snap.Load()
	next := cur
	switch target.Kind {
	case KindGuild:
		next = cur.with(target.GuildID, func(g *guildState) { applyGuildDocument(g, text) })
	case KindChannel:
		next = cur.withChannel(target.ChannelID, text, false)
	case KindGuildModule:
		schema := cur.schemas[target.Module]
		ms, _ := EvaluateModuleDocument(schema, text, true)
		next = cur.with(target.GuildID, func(g *guildState) { g.modules[target.Module] = ms })
	}
	s.snap.Store(next)
	c := Change{Target: target, GuildID: target.GuildID, Module: target.Module, Revision: revision}
	if g := next.guilds[target.GuildID]; g != nil {
		c.Active = g.active
	}
	s.subMu.Lock()
	defer s.subMu.Unlock()
	for sub := range s.subs {
		sub.push([]Change{c})
	}
}

// Subscribe calls fn with every committed Change, in commit order, on a
// goroutine of its own (one per subscriber): a slow fn delays only its own
// deliveries, never a writer, and a subscriber that falls more than 1024
// changes behind gets one Resync change instead of the backlog. A panic in
// fn is logged and delivery goes on. The returned func unsubscribes; it
// does not wait for a delivery in progress.
func (s *Service) Subscribe(fn func(Change)) (cancel func()) {
	sub := newSubscriber(fn, s.log)
	s.subMu.Lock()
	if s.closed {
		s.subMu.Unlock()
		sub.stop()
		return func() {}
	}
	s.subs[sub] = struct{}{}
	s.subMu.Unlock()
	return func() {
		s.subMu.Lock()
		delete(s.subs, sub)
		s.subMu.Unlock()
		sub.stop()
	}
}

// Close stops every subscriber's delivery goroutine and waits for them.
// The Service still answers reads; writes no longer notify.
func (s *Service) Close() {
	s.subMu.Lock()
	s.closed = true
	subs := s.subs
	s.subs = map[*subscriber]struct{}{}
	s.subMu.Unlock()
	for sub := range subs {
		sub.stop()
		<-sub.done
	}
}

// TaskPolicy returns the guild's scheduled_tasks policy from the snapshot:
// the disabled default (min_tier staff, UTC) when the guild has no valid
// server-setup document or is not active. It never allocates.
func (s *Service) TaskPolicy(guildID uint64) TaskPolicy {
	g := s.snap.Load().guilds[guildID]
	if g == nil || !g.valid || !g.active {
		return TaskPolicy{MinTier: sdk.TierStaff, Timezone: "UTC"}
	}
	return g.config.Tasks
}
