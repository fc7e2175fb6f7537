package templates

// ChecklistView is the overview's first-run checklist: the steps to a
// working Kimi, each with its state and a link. The overview shows it
// until every step is done or an admin dismissed it.
type ChecklistView struct {
	Steps []ChecklistStep
	// Done counts the steps done.
	Done int
	CSRF string
}

// ChecklistStep is one step of the first-run checklist.
type ChecklistStep struct {
	// Key names the step in test ids: "discord", "modules", "guild", "assistant".
	Key    string
	Title  string
	Detail string // the step's state in words
	Done   bool
	Href   string
	Action string // the link's text
}
