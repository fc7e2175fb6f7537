package hostkit

import (
	"fmt"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/internal/names"
)

// SplitTopic splits "<namespace>.<name>" at the first dot. Both segments must
// match `[a-z][a-z0-9_]{0,63}`; with allowWildcard the name may be "*".
// Message: "invalid event topic 't'; expected '<namespace>.<name>'".
func SplitTopic(topic string, allowWildcard bool) (namespace, name string, err error) {
	namespace, name, msg := names.SplitTopic(topic, allowWildcard)
	if msg != "" {
		return "", "", newEventTopicError(topic, "%s", msg)
	}
	return namespace, name, nil
}

func newEventTopicError(topic, format string, args ...any) *sdk.EventTopicError {
	return &sdk.EventTopicError{ModuleContractError: sdk.ModuleContractError{Message: fmt.Sprintf(format, args...)}, Topic: topic}
}

// ValidatePublishTopic checks that module may publish topic: a valid
// two-level topic in the module's own namespace. Messages:
// "event namespace 'discord' is reserved by core",
// "module 'm' may only publish under 'p'.*".
func ValidatePublishTopic(module, topic string) error {
	namespace, _, err := SplitTopic(topic, false)
	if err != nil {
		return err
	}
	if namespace == sdk.CoreTopicPrefix {
		return newEventTopicError(topic, "event namespace %s is reserved by core", pyRepr(sdk.CoreTopicPrefix))
	}
	if prefix := TablePrefix(module); namespace != prefix {
		return newEventTopicError(topic, "module %s may only publish under %s.*", pyRepr(module), pyRepr(prefix))
	}
	return nil
}

// ValidateSubscription checks that module may subscribe to pattern (a topic
// or "<namespace>.*"). The module's own namespace is always allowed; any
// other needs a declared topic in the same namespace whose name is "*" or the
// pattern's name. Message: "module 'm' did not declare event topic 'p'".
func ValidateSubscription(module string, perms sdk.Permissions, pattern string) error {
	namespace, name, err := SplitTopic(pattern, true)
	if err != nil {
		return err
	}
	if namespace == TablePrefix(module) {
		return nil
	}
	for _, declared := range perms.EventTopics {
		dns, dname, err := SplitTopic(declared, true)
		if err != nil {
			return err
		}
		if dns == namespace && (dname == "*" || dname == name) {
			return nil
		}
	}
	return newEventTopicError(pattern, "module %s did not declare event topic %s", pyRepr(module), pyRepr(pattern))
}

// MatchTopic reports whether topic matches a subscription pattern with
// fnmatch-style globbing (case-sensitive): "*" matches any run of characters
// (dots included), "?" one character, "[...]" a class ("[!...]" negated).
// Matching is iterative with a single backtrack point, so hostile patterns
// cannot make it exponential.
func MatchTopic(pattern, topic string) bool {
	return globMatch(compileGlob([]rune(pattern)), []rune(topic))
}

// globToken is one pattern element: a star, or a one-character matcher.
type globToken struct {
	star  bool
	any   bool   // '?'
	class []rune // contents of [...] (nil when literal)
	lit   rune
}

func compileGlob(p []rune) []globToken {
	var out []globToken
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*':
			if len(out) == 0 || !out[len(out)-1].star {
				out = append(out, globToken{star: true})
			}
		case '?':
			out = append(out, globToken{any: true})
		case '[':
			if end := classEnd(p[i:]); end >= 0 {
				out = append(out, globToken{class: append([]rune{}, p[i+1:i+end]...)})
				i += end
				continue
			}
			out = append(out, globToken{lit: '['}) // no closing bracket: literal
		default:
			out = append(out, globToken{lit: p[i]})
		}
	}
	return out
}

func globMatch(p []globToken, s []rune) bool {
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi].star:
			starP, starS = pi, si
			pi++
		case pi < len(p) && p[pi].matches(s[si]):
			pi++
			si++
		case starP >= 0:
			starS++
			pi, si = starP+1, starS
		default:
			return false
		}
	}
	for pi < len(p) && p[pi].star {
		pi++
	}
	return pi == len(p)
}

// classEnd returns the index of the ']' closing the class that starts at
// p[0] == '[', or -1. As in fnmatch, a ']' right after '[' or '[!' is literal.
func classEnd(p []rune) int {
	i := 1
	if i < len(p) && p[i] == '!' {
		i++
	}
	if i < len(p) && p[i] == ']' {
		i++
	}
	for ; i < len(p); i++ {
		if p[i] == ']' {
			return i
		}
	}
	return -1
}

func classMatch(class []rune, c rune) bool {
	negate := len(class) > 0 && class[0] == '!'
	if negate {
		class = class[1:]
	}
	matched := false
	for i := 0; i < len(class); i++ {
		if i+2 < len(class) && class[i+1] == '-' {
			if class[i] <= c && c <= class[i+2] {
				matched = true
			}
			i += 2
			continue
		}
		if class[i] == c {
			matched = true
		}
	}
	return matched != negate
}

// CoreTopics returns every core topic.
func CoreTopics() []string {
	return []string{sdk.TopicMessage, sdk.TopicMessageEdit, sdk.TopicMessageDelete, sdk.TopicMessageBulkDelete,
		sdk.TopicInviteCreate, sdk.TopicInviteDelete, sdk.TopicMemberJoin, sdk.TopicMemberRemove,
		sdk.TopicMemberUpdate, sdk.TopicAuditLogEntry}
}

// EventGuildID extracts the guild a core event payload belongs to (0 when
// none), the way the bus filters core events by the guild predicate.
func EventGuildID(payload any) uint64 {
	switch p := payload.(type) {
	case sdk.MessageEvent:
		return p.Message.Ref.GuildID
	case sdk.MessageEditEvent:
		return p.Ref.GuildID
	case sdk.MessageDeleteEvent:
		return p.Ref.GuildID
	case sdk.MessageBulkDeleteEvent:
		if len(p.Refs) > 0 {
			return p.Refs[0].GuildID
		}
	case sdk.InviteCreateEvent:
		return p.Invite.GuildID
	case sdk.InviteDeleteEvent:
		return p.Invite.GuildID
	case sdk.MemberJoinEvent:
		return p.Member.GuildID
	case sdk.MemberRemoveEvent:
		return p.GuildID
	case sdk.MemberUpdateEvent:
		return p.GuildID
	case sdk.AuditLogEntryEvent:
		return p.GuildID
	case interface{ EventGuildID() uint64 }:
		return p.EventGuildID()
	}
	return 0
}

func (g globToken) matches(c rune) bool {
	switch {
	case g.any:
		return true
	case g.class != nil:
		return classMatch(g.class, c)
	}
	return g.lit == c
}
