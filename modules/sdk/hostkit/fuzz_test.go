package hostkit

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kimiapp/kimi/modules/sdk"
)

// FuzzParseCustomID checks ParseCustomID never panics, agrees with a
// re-join of its pieces, and round-trips everything BuildCustomID accepts.
func FuzzParseCustomID(f *testing.F) {
	for _, s := range []string{"m:reference_kudos:thank_back:1", "m:mod:key", "m:a", "x:a:b", "", "m:::", "m:mod:key:a:b:c", "m:é:k:\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := sdk.ParseCustomID(s)
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
		built, err := sdk.BuildCustomID(id.Module, id.Key, id.Parts...)
		if err != nil {
			var mce *sdk.ModuleContractError
			if !errors.As(err, &mce) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if built != s || utf8.RuneCountInString(built) > sdk.CustomIDMaxLength {
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
			var te *sdk.EventTopicError
			if !errors.As(err, &te) || !errors.Is(err, sdk.ErrContract) {
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
			if !strings.HasPrefix(topic, TablePrefix(module)+".") || strings.HasPrefix(topic, sdk.CoreTopicPrefix+".") || strings.Contains(topic, "*") {
				t.Fatalf("module %q may publish %q", module, topic)
			}
		}
		perms := sdk.Permissions{EventTopics: []string{"discord.member_remove"}}
		if ValidateSubscription(module, perms, topic) == nil && err != nil {
			t.Fatalf("subscription to invalid pattern %q accepted", topic)
		}
	})
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
