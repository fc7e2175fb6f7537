package hostkit

import (
	"errors"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

func TestTableName(t *testing.T) {
	tests := []struct {
		module, table, want, err string
	}{
		{"kudos", "kudos", `"kudos_kudos"`, ""},
		{"reference-kudos", "result_receipts", `"reference_kudos_result_receipts"`, ""},
		{"m", "a" + strings.Repeat("b", 62), `"m_a` + strings.Repeat("b", 62) + `"`, ""},
		{"m", "a" + strings.Repeat("b", 63), "", "module 'm' table name 'a" + strings.Repeat("b", 63) + "' is not a valid identifier"},
		{"m", "Bad", "", "module 'm' table name 'Bad' is not a valid identifier"},
		{"m", "a-b", "", "module 'm' table name 'a-b' is not a valid identifier"},
		{"m", "x\n", "", `module 'm' table name 'x\n' is not a valid identifier`},
		{"m", "", "", "module 'm' table name '' is not a valid identifier"},
		{`we"ird`, "t", `"we""ird_t"`, ""},
	}
	for _, tt := range tests {
		got, err := TableName(tt.module, tt.table)
		checkErr(t, err, tt.err)
		if got != tt.want {
			t.Errorf("TableName(%q, %q) = %q, want %q", tt.module, tt.table, got, tt.want)
		}
	}
	if !ValidTableName("ok_1") || ValidTableName("1ok") {
		t.Error("ValidTableName disagrees with the pattern")
	}
}

func TestMustTableNamePanics(t *testing.T) {
	defer func() {
		r := recover()
		err, ok := r.(error)
		if !ok || !errors.Is(err, sdk.ErrContract) {
			t.Fatalf("want a contract-error panic, got %v", r)
		}
	}()
	sdk.MigrationContext{Module: "kudos"}.Table("Nope")
}

func TestSplitTopic(t *testing.T) {
	tests := []struct {
		topic    string
		wildcard bool
		ns, name string
		err      string
	}{
		{"kudos.given", false, "kudos", "given", ""},
		{"discord.member_remove", false, "discord", "member_remove", ""},
		{"kudos.*", true, "kudos", "*", ""},
		{"kudos.*", false, "", "", "invalid event topic 'kudos.*'; expected '<namespace>.<name>'"},
		{"kudos", false, "", "", "invalid event topic 'kudos'; expected '<namespace>.<name>'"},
		{"a.b.c", false, "", "", "invalid event topic 'a.b.c'; expected '<namespace>.<name>'"},
		{"*.given", true, "", "", "invalid event topic '*.given'; expected '<namespace>.<name>'"},
		{"Kudos.given", false, "", "", "invalid event topic 'Kudos.given'; expected '<namespace>.<name>'"},
		{"kudos.given\n", false, "", "", `invalid event topic 'kudos.given\n'; expected '<namespace>.<name>'`},
		{".given", false, "", "", "invalid event topic '.given'; expected '<namespace>.<name>'"},
	}
	for _, tt := range tests {
		ns, name, err := SplitTopic(tt.topic, tt.wildcard)
		checkErr(t, err, tt.err)
		var te *sdk.EventTopicError
		if tt.err != "" && !errors.As(err, &te) {
			t.Errorf("%q: want *EventTopicError, got %T", tt.topic, err)
		}
		if ns != tt.ns || name != tt.name {
			t.Errorf("SplitTopic(%q) = %q, %q", tt.topic, ns, name)
		}
	}
}

func TestValidatePublishTopic(t *testing.T) {
	tests := []struct {
		module, topic, want string
	}{
		{"kudos", "kudos.given", ""},
		{"reference-kudos", "reference_kudos.given", ""},
		{"reference-kudos", "reference-kudos.given", "invalid event topic 'reference-kudos.given'; expected '<namespace>.<name>'"},
		{"kudos", "discord.message", "event namespace 'discord' is reserved by core"},
		{"kudos", "other.given", "module 'kudos' may only publish under 'kudos'.*"},
		{"kudos", "kudos.*", "invalid event topic 'kudos.*'; expected '<namespace>.<name>'"},
	}
	for _, tt := range tests {
		checkErr(t, ValidatePublishTopic(tt.module, tt.topic), tt.want)
	}
}

func TestValidateSubscription(t *testing.T) {
	perms := sdk.Permissions{EventTopics: []string{"discord.member_remove", "other.*"}}
	tests := []struct {
		pattern, want string
	}{
		{"discord.member_remove", ""},
		{"discord.message", "module 'kudos' did not declare event topic 'discord.message'"},
		{"discord.*", "module 'kudos' did not declare event topic 'discord.*'"},
		{"other.anything", ""},
		{"other.*", ""},
		{"kudos.given", ""},
		{"kudos.*", ""},
		{"bad", "invalid event topic 'bad'; expected '<namespace>.<name>'"},
	}
	for _, tt := range tests {
		checkErr(t, ValidateSubscription("kudos", perms, tt.pattern), tt.want)
	}
	broken := sdk.Permissions{EventTopics: []string{"nope"}}
	checkErr(t, ValidateSubscription("kudos", broken, "x.y"), "invalid event topic 'nope'; expected '<namespace>.<name>'")
}

func TestMatchTopic(t *testing.T) {
	tests := []struct {
		pattern, topic string
		want           bool
	}{
		{"discord.*", "discord.message", true},
		{"discord.*", "discordx.message", false},
		{"discord.message", "discord.message", true},
		{"discord.message", "discord.message_edit", false},
		{"*", "a.b", true},
		{"a.?", "a.b", true},
		{"a.?", "a.bc", false},
		{"a.[bc]", "a.c", true},
		{"a.[!bc]", "a.c", false},
		{"a.[!bc]", "a.d", true},
		{"a.[a-c]x", "a.bx", true},
		{"a.[]]", "a.]", true},
		{"a.[", "a.[", true},
		{"a.[", "a.b", false},
		{"a.**b", "a.xyb", true},
		{"a.*b", "a.xyc", false},
		{"", "", true},
		{"a", "", false},
		{"?", "", false},
	}
	for _, tt := range tests {
		if got := MatchTopic(tt.pattern, tt.topic); got != tt.want {
			t.Errorf("MatchTopic(%q, %q) = %v, want %v", tt.pattern, tt.topic, got, tt.want)
		}
	}
}

func TestValidateResultSubscription(t *testing.T) {
	tests := []struct {
		name  string
		guild uint64
		want  string
	}{
		{"published_tasks", 100, ""},
		{"0", 1, ""},
		{strings.Repeat("a", 64), ^uint64(0), ""},
		{strings.Repeat("a", 65), 1, "scheduled-result names use 1-64 lowercase letters, digits or _"},
		{"", 1, "scheduled-result names use 1-64 lowercase letters, digits or _"},
		{"Upper Case", 1, "scheduled-result names use 1-64 lowercase letters, digits or _"},
		{"a-b", 1, "scheduled-result names use 1-64 lowercase letters, digits or _"},
		{"reports\n", 1, "scheduled-result names use 1-64 lowercase letters, digits or _"},
		{"reports", 0, "scheduled-result subscriptions require a positive guild ID"},
	}
	for _, tt := range tests {
		checkErr(t, ValidateResultSubscription(tt.name, tt.guild), tt.want)
	}
	if !ValidScheduledResultName("a_1") || ValidScheduledResultName("A") {
		t.Error("ValidScheduledResultName disagrees")
	}
}

func TestValidateResultReadLimit(t *testing.T) {
	for _, n := range []int64{1, sdk.MaxResultFileBytes} {
		if err := ValidateResultReadLimit(n); err != nil {
			t.Errorf("%d: %v", n, err)
		}
	}
	for _, n := range []int64{0, -1, sdk.MaxResultFileBytes + 1} {
		err := ValidateResultReadLimit(n)
		checkErr(t, err, "attachment read limit must be between 1 byte and 8 MiB")
		var ae *sdk.ScheduledResultAccessError
		if !errors.As(err, &ae) {
			t.Errorf("%d: want *ScheduledResultAccessError", n)
		}
	}
	err := NewResultSubscriptionClosed()
	checkErr(t, err, "Scheduled-result subscription is closed or undeclared")
}

func TestPyRepr(t *testing.T) {
	tests := map[string]string{
		"abc":        "'abc'",
		"it's":       `"it's"`,
		`a'b"c`:      `'a\'b"c'`,
		"tab\there":  `'tab\there'`,
		"cr\r":       `'cr\r'`,
		`back\`:      `'back\\'`,
		"\x00":       `'\x00'`,
		"\u00a0":     `'\xa0'`,
		"\u2028":     `'\u2028'`,
		"é":          "'é'",
		"\U000e0001": `'\U000e0001'`,
		"\u00ad":     `'\xad'`,
		"\u2000":     `'\u2000'`,
		"\xff":       "'\ufffd'",
	}
	for in, want := range tests {
		if got := pyRepr(in); got != want {
			t.Errorf("pyRepr(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestMatchTopicHostilePattern(t *testing.T) {
	pattern := strings.Repeat("*a", 40) + "b"
	if MatchTopic(pattern, strings.Repeat("a", 200)) {
		t.Fatal("matched")
	}
	if !MatchTopic(strings.Repeat("*a", 40), strings.Repeat("a", 200)) {
		t.Fatal("did not match")
	}
}
