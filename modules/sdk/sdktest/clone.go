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
