package sdktest

import (
	"slices"

	"github.com/kimiapp/kimi/modules/sdk"
)

// The fakes record deep copies of what a module sends: a module that reuses
// and changes an embed, button or layout after the call must not rewrite
// the record a test asserts on.

func cloneEmbed(e *sdk.OutgoingEmbed) *sdk.OutgoingEmbed {
	if e == nil {
		return nil
	}
	c := *e
	c.Fields = slices.Clone(e.Fields)
	return &c
}

func cloneRef(r *sdk.MessageRef) *sdk.MessageRef {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

func cloneComponents(components []sdk.Component) []sdk.Component {
	if components == nil {
		return nil
	}
	out := make([]sdk.Component, len(components))
	for i, c := range components {
		switch v := c.(type) {
		case sdk.ButtonSpec:
			v.Parts = slices.Clone(v.Parts)
			out[i] = v
		case sdk.SelectSpec:
			v.Parts = slices.Clone(v.Parts)
			v.Options = slices.Clone(v.Options)
			out[i] = v
		default:
			out[i] = c
		}
	}
	return out
}

func cloneLayout(l *sdk.OutgoingLayout) *sdk.OutgoingLayout {
	if l == nil {
		return nil
	}
	c := *l
	if l.AccentColor != nil {
		accent := *l.AccentColor
		c.AccentColor = &accent
	}
	c.Items = make([]sdk.LayoutItem, len(l.Items))
	for i, item := range l.Items {
		switch v := item.(type) {
		case sdk.LayoutGallery:
			v.URLs = slices.Clone(v.URLs)
			c.Items[i] = v
		case sdk.LayoutSection:
			v.Texts = slices.Clone(v.Texts)
			c.Items[i] = v
		default:
			c.Items[i] = item
		}
	}
	return &c
}

func cloneOutgoing(m sdk.OutgoingMessage) sdk.OutgoingMessage {
	m.Embed = cloneEmbed(m.Embed)
	m.ReplyTo = cloneRef(m.ReplyTo)
	m.Components = cloneComponents(m.Components)
	return m
}

func cloneResponse(r sdk.Response) sdk.Response {
	r.Embed = cloneEmbed(r.Embed)
	r.Layout = cloneLayout(r.Layout)
	r.Components = cloneComponents(r.Components)
	return r
}

// Reads hand out deep copies of the fake's data for the same reason: a
// module changing a fetched snapshot must not change what the next fetch
// returns.

func cloneMessage(m sdk.MessageSnapshot) sdk.MessageSnapshot {
	m.Attachments = slices.Clone(m.Attachments)
	m.EmbedImageURLs = slices.Clone(m.EmbedImageURLs)
	m.EmbedTexts = slices.Clone(m.EmbedTexts)
	return m
}

func cloneMessages(ms []sdk.MessageSnapshot) []sdk.MessageSnapshot {
	if ms == nil {
		return nil
	}
	out := make([]sdk.MessageSnapshot, len(ms))
	for i, m := range ms {
		out[i] = cloneMessage(m)
	}
	return out
}

func cloneMember(m sdk.MemberSnapshot) sdk.MemberSnapshot {
	m.RoleIDs = slices.Clone(m.RoleIDs)
	return m
}

func cloneChannel(c sdk.ChannelSnapshot) sdk.ChannelSnapshot {
	c.AppliedTags = slices.Clone(c.AppliedTags)
	return c
}

func cloneChannels(cs []sdk.ChannelSnapshot) []sdk.ChannelSnapshot {
	if cs == nil {
		return nil
	}
	out := make([]sdk.ChannelSnapshot, len(cs))
	for i, c := range cs {
		out[i] = cloneChannel(c)
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneInvites(is []sdk.InviteSnapshot) []sdk.InviteSnapshot {
	if is == nil {
		return nil
	}
	out := make([]sdk.InviteSnapshot, len(is))
	for i, inv := range is {
		inv.Uses, inv.MaxUses, inv.Temporary = clonePtr(inv.Uses), clonePtr(inv.MaxUses), clonePtr(inv.Temporary)
		out[i] = inv
	}
	return out
}
