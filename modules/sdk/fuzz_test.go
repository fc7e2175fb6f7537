package sdk

import (
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseCustomID checks ParseCustomID never panics, agrees with a
// re-join of its pieces, and round-trips everything BuildCustomID accepts.
func FuzzParseCustomID(f *testing.F) {
	for _, s := range []string{"m:reference_kudos:thank_back:1", "m:mod:key", "m:a", "x:a:b", "", "m:::", "m:mod:key:a:b:c", "m:é:k:\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := ParseCustomID(s)
		if !ok {
			if strings.Count(s, ":") >= 2 && strings.HasPrefix(s, "m:") {
				t.Fatalf("rejected %q", s)
			}
			return
		}
		joined := strings.Join(append([]string{"m", id.Module, id.Key}, id.Parts...), ":")
		if joined != s {
			t.Fatalf("re-join %q != %q", joined, s)
		}
		built, err := BuildCustomID(id.Module, id.Key, id.Parts...)
		if err != nil {
			var mce *ModuleContractError
			if !errors.As(err, &mce) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if built != s || utf8.RuneCountInString(built) > CustomIDMaxLength {
			t.Fatalf("BuildCustomID(%+v) = %q", id, built)
		}
	})
}

// FuzzTopics checks the topic validators never panic, only accept exact
// two-segment topics without control characters, and type their errors.
func FuzzTopics(f *testing.F) {
	for _, s := range []string{"kudos.given", "discord.message", "kudos.*", "a.b.c", "kudos.given\n", ".x", "x.", "*.*", "Kudos.x"} {
		f.Add("kudos", s)
	}
	f.Add("reference-kudos", "reference_kudos.given")
	f.Fuzz(func(t *testing.T, module, topic string) {
		ns, name, err := SplitTopic(topic, true)
		if err != nil {
			var te *EventTopicError
			if !errors.As(err, &te) || !errors.Is(err, ErrContract) {
				t.Fatalf("untyped error %T", err)
			}
		} else {
			if ns+"."+name != topic || strings.ContainsAny(topic, "\n\r\t ") {
				t.Fatalf("accepted %q as %q.%q", topic, ns, name)
			}
			if !MatchTopic(topic, topic) {
				t.Fatalf("pattern %q does not match itself", topic)
			}
			if name == "*" && !MatchTopic(topic, ns+".x") {
				t.Fatalf("wildcard %q does not match %s.x", topic, ns)
			}
		}
		if ValidatePublishTopic(module, topic) == nil {
			if !strings.HasPrefix(topic, TablePrefix(module)+".") || strings.HasPrefix(topic, CoreTopicPrefix+".") || strings.Contains(topic, "*") {
				t.Fatalf("module %q may publish %q", module, topic)
			}
		}
		perms := Permissions{EventTopics: []string{"discord.member_remove"}}
		if ValidateSubscription(module, perms, topic) == nil && err != nil {
			t.Fatalf("subscription to invalid pattern %q accepted", topic)
		}
	})
}

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
		err := ValidateHostRule(rule)
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
				v, err := CoerceGuildSetting(field, raw)
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

// globRegexp translates a glob into an anchored regexp the way Python's
// fnmatch.translate does, as an independent oracle for MatchTopic.
func globRegexp(pattern string) (*regexp.Regexp, bool) {
	p := []rune(pattern)
	var b strings.Builder
	b.WriteString(`(?s)\A`)
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			end := classEnd(p[i:])
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := p[i+1 : i+end]
			b.WriteString("[")
			if len(class) > 0 && class[0] == '!' {
				b.WriteString("^")
				class = class[1:]
			}
			for _, r := range class {
				if r == '\\' || r == '[' || r == ']' || r == '^' {
					b.WriteRune('\\')
				}
				b.WriteRune(r)
			}
			b.WriteString("]")
			i += end
		default:
			b.WriteString(regexp.QuoteMeta(string(p[i])))
		}
	}
	b.WriteString(`\z`)
	re, err := regexp.Compile(b.String())
	return re, err == nil
}

// FuzzMatchTopic compares MatchTopic with a regexp translation of the glob.
func FuzzMatchTopic(f *testing.F) {
	for _, s := range [][2]string{{"discord.*", "discord.message"}, {"a.[!b]", "a.c"}, {"*a*b", "xaxb"}, {"a.[]]", "a.]"}, {"[", "["}, {"?.*", "x.y"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, topic string) {
		if !utf8.ValidString(pattern) || !utf8.ValidString(topic) || strings.Contains(pattern, "-") {
			return // ranges: Go rejects reversed ones that fnmatch drops
		}
		re, ok := globRegexp(pattern)
		if !ok {
			return
		}
		if got, want := MatchTopic(pattern, topic), re.MatchString(topic); got != want {
			t.Fatalf("MatchTopic(%q, %q) = %v, regexp %s says %v", pattern, topic, got, re, want)
		}
	})
}
