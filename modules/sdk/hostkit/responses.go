package hostkit

import "github.com/kimiapp/kimi/modules/sdk"

// ValidateResponseBody refuses content or an embed sent together with a
// layout: a Components V2 message carries its text in the layout ("layout
// cannot be combined with content or embed").
func ValidateResponseBody(r sdk.Response) error {
	if r.Layout != nil && (r.Content != "" || r.Embed != nil) {
		return contractErrorf("layout cannot be combined with content or embed")
	}
	return nil
}

// ValidateLayoutEdit refuses an edit without a layout of a message that
// already uses one ("a Components V2 message must continue to use layout
// when edited"); originalUsesLayout is whether the message being edited
// does.
func ValidateLayoutEdit(originalUsesLayout bool, r sdk.Response) error {
	if originalUsesLayout && r.Layout == nil {
		return contractErrorf("a Components V2 message must continue to use layout when edited")
	}
	return nil
}
