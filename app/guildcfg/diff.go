package guildcfg

import "strings"

// DiffOp says what a diff line is.
type DiffOp byte

// Diff line kinds.
const (
	DiffContext DiffOp = ' '
	DiffDelete  DiffOp = '-'
	DiffInsert  DiffOp = '+'
)

// DiffLine is one line of a hunk (without its newline).
type DiffLine struct {
	Op   DiffOp
	Text string
}

// Hunk is a run of changes with up to DiffContextLines unchanged lines
// around it. Starts are 1-based line numbers (as in a unified diff; 0 when
// the side has no lines).
type Hunk struct {
	BeforeStart, BeforeLines int
	AfterStart, AfterLines   int
	Lines                    []DiffLine
}

// DiffContextLines is how many unchanged lines a hunk shows around changes.
const DiffContextLines = 3

// maxDiffEdits bounds the edit search; past it the diff is one hunk that
// replaces everything that differs (still correct, only less minimal).
const maxDiffEdits = 1000

// Diff compares two texts line by line (Myers' algorithm, after trimming the
// common prefix and suffix) and returns the hunks, none when they are equal.
func Diff(before, after string) []Hunk {
	a, b := splitLines(before), splitLines(after)
	ops := diffLines(a, b)
	return hunks(ops)
}

type edit struct {
	op     DiffOp
	text   string
	ai, bi int // 0-based line indexes on each side
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\n")
	}
	return lines
}

func diffLines(a, b []string) []edit {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []edit
	for i := 0; i < pre; i++ {
		out = append(out, edit{op: DiffContext, text: a[i], ai: i, bi: i})
	}
	out = append(out, myers(a[pre:len(a)-suf], b[pre:len(b)-suf], pre, pre)...)
	for i := 0; i < suf; i++ {
		ai, bi := len(a)-suf+i, len(b)-suf+i
		out = append(out, edit{op: DiffContext, text: a[ai], ai: ai, bi: bi})
	}
	return out
}

// myers returns the shortest edit script from a to b; offsets shift the
// line indexes back into the whole texts.
func myers(a, b []string, aOff, bOff int) []edit {
	n, m := len(a), len(b)
	replaceAll := func() []edit {
		out := make([]edit, 0, n+m)
		for i, l := range a {
			out = append(out, edit{op: DiffDelete, text: l, ai: aOff + i, bi: bOff})
		}
		for j, l := range b {
			out = append(out, edit{op: DiffInsert, text: l, ai: aOff + n, bi: bOff + j})
		}
		return out
	}
	if n == 0 || m == 0 {
		return replaceAll()
	}
	maxD := min(n+m, maxDiffEdits)
	off := maxD
	v := make([]int, 2*maxD+2)
	var trace [][]int
	found := false
	for d := 0; d <= maxD && !found; d++ {
		trace = append(trace, append([]int(nil), v...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = true
				break
			}
		}
	}
	if !found {
		return replaceAll()
	}
	// Walk the trace backwards from (n, m).
	var rev []edit
	x, y := n, m
	for d := len(trace) - 1; d >= 0; d-- {
		vd := trace[d]
		k := x - y
		var prevK int
		if k == -d || (k != d && vd[off+k-1] < vd[off+k+1]) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := vd[off+prevK]
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x, y = x-1, y-1
			rev = append(rev, edit{op: DiffContext, text: a[x], ai: aOff + x, bi: bOff + y})
		}
		if d == 0 {
			break
		}
		if x == prevX {
			y--
			rev = append(rev, edit{op: DiffInsert, text: b[y], ai: aOff + x, bi: bOff + y})
		} else {
			x--
			rev = append(rev, edit{op: DiffDelete, text: a[x], ai: aOff + x, bi: bOff + y})
		}
	}
	out := make([]edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}

// hunks groups an edit script into hunks with DiffContextLines of context.
func hunks(ops []edit) []Hunk {
	var out []Hunk
	i := 0
	for i < len(ops) {
		for i < len(ops) && ops[i].op == DiffContext {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(0, i-DiffContextLines)
		end := i
		// Extend while the next change is within 2*context unchanged lines.
		for {
			for end < len(ops) && ops[end].op != DiffContext {
				end++
			}
			run := end
			for run < len(ops) && ops[run].op == DiffContext {
				run++
			}
			if run < len(ops) && run-end <= 2*DiffContextLines {
				end = run
				continue
			}
			end = min(len(ops), end+DiffContextLines)
			break
		}
		h := Hunk{BeforeStart: ops[start].ai + 1, AfterStart: ops[start].bi + 1}
		for _, e := range ops[start:end] {
			h.Lines = append(h.Lines, DiffLine{Op: e.op, Text: e.text})
			if e.op != DiffInsert {
				h.BeforeLines++
			}
			if e.op != DiffDelete {
				h.AfterLines++
			}
		}
		if h.BeforeLines == 0 {
			h.BeforeStart--
		}
		if h.AfterLines == 0 {
			h.AfterStart--
		}
		out = append(out, h)
		i = end
	}
	return out
}
