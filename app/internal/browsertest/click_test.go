package browsertest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/chromedp/cdproto"
)

func TestStaleNode(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"node id gone", &cdproto.Error{Code: -32000, Message: "Could not find node with given id"}, true},
		{"wrapped", fmt.Errorf("click: %w", &cdproto.Error{Code: -32000, Message: "Node is detached from document"}), true},
		{"no box model", &cdproto.Error{Code: -32000, Message: "Could not compute box model."}, true},
		{"another -32000", &cdproto.Error{Code: -32000, Message: "Cannot navigate to invalid URL"}, false},
		{"another code", &cdproto.Error{Code: -32602, Message: "Could not find node with given id"}, false},
		{"not Chromium's", errors.New("Could not find node with given id"), false},
		{"nil", nil, false},
	} {
		if got := staleNode(tc.err); got != tc.want {
			t.Errorf("%s: staleNode = %v, want %v", tc.name, got, tc.want)
		}
	}
}
