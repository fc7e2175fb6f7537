package sdk

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// APIVersion is the module API version this SDK implements (the reference's
// MODULE_API_VERSION). Spec.APIVersion must equal it.
const APIVersion = 2

// SDKVersion is the kimi-agent-module-api release this package renders.
const SDKVersion = "2.4.0"

// Naming constants shared by declarations and ports.
const (
	// CoreTopicPrefix is the event namespace reserved for core (discord.*).
	CoreTopicPrefix = "discord"
	// CustomIDPrefix starts every module-owned component custom id.
	CustomIDPrefix = "m"
	// CustomIDMaxLength is Discord's custom id limit, in characters.
	CustomIDMaxLength = 100
	// MaxModuleNameLength bounds module names (1 letter + up to 63 more).
	MaxModuleNameLength = 64
)

// Every pattern is anchored with \A…\z: unlike Python's re.match with $, a
// trailing newline is never accepted.
var (
	moduleNameRE   = regexp.MustCompile(`\A[a-z][a-z0-9_-]{0,63}\z`)
	tableNameRE    = regexp.MustCompile(`\A[a-z][a-z0-9_]{0,62}\z`)
	topicSegmentRE = regexp.MustCompile(`\A[a-z][a-z0-9_]{0,63}\z`)
	serviceNameRE  = regexp.MustCompile(`\A[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\z`)
	settingNameRE  = regexp.MustCompile(`\A[a-z][a-z0-9_]{0,63}\z`)
	guildIDTextRE  = regexp.MustCompile(`\A[0-9]{1,25}\z`)
	resultNameRE   = regexp.MustCompile(`\A[a-z0-9_]{1,64}\z`)
)

// reservedModuleNames are core namespaces no module may take (after "-"→"_").
var reservedModuleNames = map[string]bool{CoreTopicPrefix: true, "proposals": true}

// TablePrefix returns the module's normalized prefix ("-" replaced by "_"),
// used for table names and the module's event namespace.
func TablePrefix(module string) string { return strings.ReplaceAll(module, "-", "_") }

// ValidateModuleName checks a module name: `[a-z][a-z0-9_-]{0,63}` and not
// "discord" or "proposals" after normalization. Messages:
// "invalid module name 'x'", "module name 'x' is reserved by core".
func ValidateModuleName(name string) error {
	if !moduleNameRE.MatchString(name) {
		return contractErrorf("invalid module name %s", pyRepr(name))
	}
	if reservedModuleNames[TablePrefix(name)] {
		return contractErrorf("module name %s is reserved by core", pyRepr(name))
	}
	return nil
}

// ValidTableName reports whether name is a valid logical table name
// (`[a-z][a-z0-9_]{0,62}`).
func ValidTableName(name string) bool { return tableNameRE.MatchString(name) }

// TableName returns the quoted physical name `"<prefix>_<name>"` of a
// module's logical table, the value Storage.Table returns. Message for an
// invalid name: "module 'm' table name 'x' is not a valid identifier".
func TableName(module, name string) (string, error) {
	if !tableNameRE.MatchString(name) {
		return "", contractErrorf("module %s table name %s is not a valid identifier", pyRepr(module), pyRepr(name))
	}
	physical := TablePrefix(module) + "_" + name
	return `"` + strings.ReplaceAll(physical, `"`, `""`) + `"`, nil
}

// SplitTopic splits "<namespace>.<name>" at the first dot. Both segments must
// match `[a-z][a-z0-9_]{0,63}`; with allowWildcard the name may be "*".
// Message: "invalid event topic 't'; expected '<namespace>.<name>'".
func SplitTopic(topic string, allowWildcard bool) (namespace, name string, err error) {
	namespace, name, found := strings.Cut(topic, ".")
	nameOK := topicSegmentRE.MatchString(name) || (allowWildcard && name == "*")
	if !found || !topicSegmentRE.MatchString(namespace) || !nameOK {
		return "", "", newEventTopicError(topic, "invalid event topic %s; expected '<namespace>.<name>'", pyRepr(topic))
	}
	return namespace, name, nil
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
	if namespace == CoreTopicPrefix {
		return newEventTopicError(topic, "event namespace %s is reserved by core", pyRepr(CoreTopicPrefix))
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
func ValidateSubscription(module string, perms Permissions, pattern string) error {
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

func (g globToken) matches(c rune) bool {
	switch {
	case g.any:
		return true
	case g.class != nil:
		return classMatch(g.class, c)
	}
	return g.lit == c
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

// CustomID is a parsed module-owned component custom id
// `m:<module>:<key>[:part…]`.
type CustomID struct {
	Module string
	Key    string
	Parts  []string
}

// BuildCustomID returns `m:<module>:<key>[:part…]`. The key must match
// `[a-z][a-z0-9_]{0,63}` ("invalid component key 'k'"), parts may not contain
// ':' ("custom_id parts may not contain ':'"), and the result is at most
// CustomIDMaxLength (100) characters ("custom_id exceeds 100 characters").
func BuildCustomID(module, key string, parts ...string) (string, error) {
	if !topicSegmentRE.MatchString(key) {
		return "", contractErrorf("invalid component key %s", pyRepr(key))
	}
	for _, part := range parts {
		if strings.Contains(part, ":") {
			return "", contractErrorf("custom_id parts may not contain ':'")
		}
	}
	id := strings.Join(append([]string{CustomIDPrefix, module, key}, parts...), ":")
	if utf8.RuneCountInString(id) > CustomIDMaxLength {
		return "", contractErrorf("custom_id exceeds %d characters", CustomIDMaxLength)
	}
	return id, nil
}

// ParseCustomID splits a custom id on ':' and returns its module, key and
// parts when it has at least three pieces and starts with "m"; ok is false
// otherwise. It does not validate the pieces, exactly like the reference.
func ParseCustomID(s string) (id CustomID, ok bool) {
	pieces := strings.Split(s, ":")
	if len(pieces) < 3 || pieces[0] != CustomIDPrefix {
		return CustomID{}, false
	}
	return CustomID{Module: pieces[1], Key: pieces[2], Parts: pieces[3:]}, true
}

// ValidateGuildID checks a guild id for scheduled-result subscriptions
// (0 < id < 2^64, so any non-zero uint64). Message: "scheduled-result
// subscriptions require a positive guild ID".
func ValidateGuildID(guildID uint64) error {
	if guildID == 0 {
		return contractErrorf("scheduled-result subscriptions require a positive guild ID")
	}
	return nil
}
