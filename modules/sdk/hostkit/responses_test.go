package hostkit

import (
	"errors"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

func TestValidateResponseBodyAndLayoutEdit(t *testing.T) {
	layout := &sdk.OutgoingLayout{Items: []sdk.LayoutItem{sdk.LayoutText{Content: "hi"}}}
	const combined = "layout cannot be combined with content or embed"
	const keep = "a Components V2 message must continue to use layout when edited"
	tests := []struct {
		name       string
		r          sdk.Response
		usesLayout bool
		body, edit string // "" = accepted
	}{
		{"content only", sdk.Response{Content: "hi"}, false, "", ""},
		{"layout only", sdk.Response{Layout: layout}, false, "", ""},
		{"layout with content", sdk.Response{Layout: layout, Content: "hi"}, false, combined, ""},
		{"layout with embed", sdk.Response{Layout: layout, Embed: &sdk.OutgoingEmbed{Title: "t"}}, false, combined, ""},
		{"layout message edited with a layout", sdk.Response{Layout: layout}, true, "", ""},
		{"layout message edited with content", sdk.Response{Content: "hi"}, true, "", keep},
		{"layout message edited to nothing", sdk.Response{}, true, "", keep},
	}
	check := func(t *testing.T, what string, err error, want string) {
		t.Helper()
		if want == "" && err != nil {
			t.Errorf("%s = %v, want accepted", what, err)
		}
		if want != "" && (err == nil || err.Error() != want || !errors.Is(err, sdk.ErrContract)) {
			t.Errorf("%s = %v, want contract error %q", what, err, want)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, "body", ValidateResponseBody(tt.r), tt.body)
			check(t, "edit", ValidateLayoutEdit(tt.usesLayout, tt.r), tt.edit)
		})
	}
}
