package sdk

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// Settings may hold secrets (API keys, tokens): printing or logging them
// shows the names only, never a value.
func TestSettingsNeverPrintValues(t *testing.T) {
	s := NewSettings(map[string]any{"api_key": "s3cret-token", "daily_limit": 987654})
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("loaded", "settings", s)
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("loaded", "settings", s)
	printed := []string{
		fmt.Sprint(s), fmt.Sprintf("%v|%+v|%#v|%s|%q", s, s, s, s, s),
		fmt.Sprintf("%+v", struct{ S Settings }{s}), logged.String(),
	}
	for _, out := range printed {
		if strings.Contains(out, "s3cret") || strings.Contains(out, "987654") {
			t.Errorf("a setting value leaked: %s", out)
		}
		if !strings.Contains(out, "api_key") || !strings.Contains(out, "daily_limit") {
			t.Errorf("names missing (they help debugging): %s", out)
		}
	}
	if s.String("api_key") != "s3cret-token" || s.Int("daily_limit") != 987654 {
		t.Error("accessors must still return the values")
	}
}
