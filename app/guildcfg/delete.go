package guildcfg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/kimiapp/kimi/app/store"
)

// ActionDocumentDelete is a document removed (a proposal's rollback to an
// absent baseline).
const ActionDocumentDelete = "guild.document.delete"

// Delete removes the target's document if its current revision is still
// expectedRevision, so the target reads as never written again (Exists
// false, EmptyRevision): the rollback of an approved proposal whose
// baseline was absent. It commits the removal, a history row (the empty
// text, after revision EmptyRevision) and an ActionDocumentDelete audit
// row in one transaction, then updates the snapshot and notifies
// subscribers. Deleting an absent document changes nothing and records
// nothing. A stale expectedRevision is a *ConflictError.
func (s *Service) Delete(ctx context.Context, target Target, expectedRevision string, actor Actor) error {
	if err := actor.validate(); err != nil {
		return err
	}
	if err := s.checkTarget(target); err != nil {
		return err
	}
	key := target.String()
	now := s.now()

	s.mu.Lock()
	defer s.mu.Unlock()
	deleted := false
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		cur, exists, err := readDocument(ctx, tx, key)
		if err != nil {
			return err
		}
		curRev := EmptyRevision
		if exists {
			curRev = cur.revision
		}
		if expectedRevision != curRev {
			return &ConflictError{Target: key, Expected: expectedRevision, Current: s.view(target, cur, exists)}
		}
		if !exists {
			return nil
		}
		id, err := insertHistory(ctx, tx, historyRow{
			target: key, at: now, actorKind: actor.Kind, actor: actor.AuditName(), action: "save",
			beforeRevision: curRev, afterRevision: EmptyRevision,
		})
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM kimi_documents WHERE target = ?`, key); err != nil {
			return fmt.Errorf("guildcfg: delete document %s: %w", key, err)
		}
		deleted = true
		return store.AuditTx(ctx, tx, store.AuditEntry{
			At: now, Actor: actor.AuditName(), Action: ActionDocumentDelete, Target: key, IP: actor.IP,
			Detail: fmt.Sprintf("revision %s -> absent, history entry %d", ShortRevision(curRev), id),
		})
	})
	if err != nil {
		// Whatever the transaction did, the next read goes to the database.
		s.docs.drop(key)
		var conflict *ConflictError
		if errors.As(err, &conflict) {
			return err
		}
		return fmt.Errorf("guildcfg: delete %s: %w", key, err)
	}
	// Cached before subscribers are told (see write).
	s.docs.set(key, s.view(target, storedDocument{}, false))
	if deleted {
		s.publishDelete(target)
	}
	return nil
}

// publishDelete is publish for a removed document. Called with s.mu held.
func (s *Service) publishDelete(target Target) {
	cur := s.snap.Load()
	next := cur
	switch target.Kind {
	case KindGuild:
		next = cur.with(target.GuildID, func(g *guildState) {
			g.hasDoc, g.revision, g.config, g.valid, g.problems = false, "", GuildConfig{}, false, nil
		})
	case KindGuildModule:
		next = cur.with(target.GuildID, func(g *guildState) { delete(g.modules, target.Module) })
	case KindChannel:
		next = cur.withChannel(target.ChannelID, "", true)
	}
	s.snap.Store(next)
	c := Change{Target: target, GuildID: target.GuildID, Module: target.Module, Revision: EmptyRevision}
	if g := next.guilds[target.GuildID]; g != nil {
		c.Active = g.active
	}
	s.subMu.Lock()
	defer s.subMu.Unlock()
	for sub := range s.subs {
		sub.push([]Change{c})
	}
}
