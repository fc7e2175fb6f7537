package sdk

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzValidateHostRule checks host-rule validation never panics and only
// accepts exact lowercase hostnames, the CDN token, or setting references.
func FuzzValidateHostRule(f *testing.F) {
	for _, s := range []string{"api.example.com", "*.example.com", "discord-cdn", "${api_host}", "EXAMPLE.com", "a..b", "", "a-.b", strings.Repeat("a.", 127) + "a"} {
		f.Add(s, "https", 443, false)
	}
	f.Fuzz(func(t *testing.T, host, scheme string, port int, private bool) {
		rule := HostRule{Host: host, Schemes: []string{scheme}, Ports: []int{port}}
		if private {
			rule.Network = NetworkPrivate
		}
		err := validateHostRule(rule)
		if err != nil {
			if !errors.Is(err, ErrContract) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if scheme != "http" && scheme != "https" || port < 1 || port > 65535 {
			t.Fatalf("accepted scheme %q port %d", scheme, port)
		}
		if _, isSetting := rule.SettingName(); !isSetting && !rule.IsDiscordCDN() {
			if host != strings.ToLower(host) || strings.ContainsAny(host, "*\n/:@ ") || len(host) > 253 || len(host) == 0 {
				t.Fatalf("accepted host %q", host)
			}
		}
		if rule.IsDiscordCDN() && private {
			t.Fatal("private discord-cdn accepted")
		}
	})
}

// FuzzCoerceGuildSetting checks coercion never panics, returns the
// documented Go type for each kind, and that ids round-trip as decimals.
func FuzzCoerceGuildSetting(f *testing.F) {
	for _, s := range []string{"777", " 12 ", "abc", "-1", "18446744073709551616", "true", "member", strings.Repeat("9", 25), ""} {
		f.Add(s, int64(5), true)
	}
	kinds := []GuildSettingKind{GuildSettingInt, GuildSettingID, GuildSettingIDList, GuildSettingStr, GuildSettingStrList, GuildSettingEnum, GuildSettingBool}
	f.Fuzz(func(t *testing.T, text string, n int64, b bool) {
		for _, kind := range kinds {
			field := GuildSettingField{Name: "x", Kind: kind}
			if kind == GuildSettingEnum {
				field.Choices = []string{"member", "regular", "staff"}
			}
			for _, raw := range []any{text, n, b, []any{text, n}, []string{text}} {
				v, err := field.Coerce(raw)
				if err != nil {
					if !strings.HasPrefix(err.Error(), "x ") {
						t.Fatalf("message %q lacks the field name", err)
					}
					continue
				}
				switch kind {
				case GuildSettingInt:
					_, ok := v.(int64)
					mustType(t, ok, kind, v)
				case GuildSettingID:
					id, ok := v.(uint64)
					mustType(t, ok, kind, v)
					if s, isStr := raw.(string); isStr && strconv.FormatUint(id, 10) != strings.TrimLeft(strings.TrimSpace(s), "0") && id != 0 {
						t.Fatalf("id %q coerced to %d", s, id)
					}
				case GuildSettingIDList:
					ids, ok := v.([]uint64)
					mustType(t, ok, kind, v)
					if len(ids) > MaxGuildSettingListEntries {
						t.Fatal("list too long")
					}
				case GuildSettingStr:
					s, ok := v.(string)
					mustType(t, ok, kind, v)
					if utf8.RuneCountInString(s) > MaxGuildSettingStringLength {
						t.Fatal("string too long")
					}
				case GuildSettingStrList:
					_, ok := v.([]string)
					mustType(t, ok, kind, v)
				case GuildSettingEnum:
					s, ok := v.(string)
					mustType(t, ok, kind, v)
					if !slices.Contains(field.Choices, s) {
						t.Fatalf("enum value %q", s)
					}
				case GuildSettingBool:
					_, ok := v.(bool)
					mustType(t, ok, kind, v)
				}
			}
		}
		out, err := RenderGuildSettings(map[string]any{"s": text, "n": n, "b": b, "l": []string{text}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out, "---\n") || !strings.HasSuffix(out, "\n---\n") || strings.Count(out, "\n") != 6 {
			t.Fatalf("rendered %q", out)
		}
		for _, r := range out {
			if r != '\n' && (r < 0x20 || yamlUnprintable(r)) {
				t.Fatalf("unescaped %U in %q", r, out)
			}
		}
	})
}

func mustType(t *testing.T, ok bool, kind GuildSettingKind, v any) {
	t.Helper()
	if !ok {
		t.Fatalf("%s coerced to %T", kind, v)
	}
}
