// Package labs runs the labs in labs/*.md as a learner would: TestLabs
// (labs_test.go) runs their commands, on a cluster. This file holds what
// needs no cluster, so that markdown_test.go checks it on any machine:
// reading a lab's fenced blocks, and comparing a command's output with the
// output the lab shows.
package labs

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

const (
	secondTerminal = "# in a second terminal"
	needsRealNode  = "<!-- needs: real node -->"
	// workIsCluster marks a lab whose work is its cluster (lab 1): its
	// Check section runs before its first block, where it must fail, not
	// after it (checkerBefore).
	workIsCluster = "<!-- its work: the cluster -->"
	// onKind starts the line of every lab that says how to do it on kind:
	// "`make kind-up` in place of `make cluster-up`", and any other command
	// that differs there, each as "`NEW` in place of `OLD`". The lab runner,
	// with E2E_PROVIDER=kind, runs the lab so (kindReplacer).
	onKind = "**On kind**: "
	// checkSection is the heading of the section whose ```sh blocks are the
	// lab's checks (checks, and make lab-check).
	checkSection = "Check"
	// notRunReason is what the paragraph above a ```console block says, so
	// that a learner knows why these commands are not checked like the others.
	notRunReason = "not run"
	// gap, as a line of a ```text block or inside one, stands for output the
	// lab leaves out.
	gap = "..."
	// stepCheck starts a ```sh block that checks the step before it: the
	// ```sh block just above (its ```text block between them, if any). The
	// runner runs it before that step, where it must fail, and after, where
	// it must pass: a check that passes without the step's work proves
	// nothing.
	stepCheck = "# check: "
)

// The fences a lab may use. Any other is refused rather than skipped: a
// block the runner skipped by mistake (```bash, ```shell, a bare ```) would
// be a command nobody checks, which is how a lab rots.
const (
	fenceRun    = "sh"      // commands, run in order
	fenceOutput = "text"    // the output of the ```sh block above it
	fenceNotRun = "console" // commands that cannot run here; the paragraph above says why
	knownFences = "```sh (commands the test runs), ```text (the output of the ```sh block above it) or ```console (commands it cannot run, with the reason in the paragraph above)"
)

// A step is a ```sh block of a lab, with the output the lab shows for it.
type step struct {
	line       int      // of its opening fence, from 1
	script     string   // its lines, each ending in "\n"
	background bool     // its first line is secondTerminal
	want       []string // the lines of the ```text block under it
	wantLine   int      // that block's opening fence; 0 when it has none
	section    string   // the "## " heading it is under, without the "## "
	check      string   // for a step's check (stepCheck), what it proves; "" for a step
}

// parse reads the fenced blocks of the lab named name and returns its steps
// in order. It refuses a fence it does not know, a ```console block with no
// reason above it, a ```text block that does not follow a ```sh block whose
// output it can be, and a block that is not closed; the error names the file
// and line.
func parse(name string, r io.Reader) ([]step, error) {
	var (
		steps     []step
		kind      string   // of the block being read; "" outside blocks
		start     int      // its opening fence's line
		body      []string // its lines
		paragraph []string // the prose paragraph last read outside blocks
		section   string   // the last "## " heading read outside blocks
		blank     bool     // a blank line ended it
		lastKind  string   // of the last block closed
		n         int
	)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case kind == "" && strings.HasPrefix(trimmed, "```"):
			kind, start, body = strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), n, nil
			switch kind {
			case fenceRun, fenceOutput:
			case fenceNotRun:
				if !strings.Contains(strings.ToLower(strings.Join(paragraph, " ")), notRunReason) {
					return nil, fmt.Errorf("%s:%d: a ```console block is not run by the test, and the paragraph just above it does not say why: add the reason there, with the words %q (for example: these are %s by make test, which runs offline)", name, n, notRunReason, notRunReason)
				}
			default:
				return nil, fmt.Errorf("%s:%d: the fence %q is not one the lab runner knows, and it skips nothing: use %s", name, n, trimmed, knownFences)
			}
		case kind == "":
			if strings.HasPrefix(line, "## ") {
				section = strings.TrimSpace(strings.TrimPrefix(line, "## "))
			}
			switch {
			case trimmed == "":
				blank = true
			case blank:
				paragraph, blank = []string{trimmed}, false
			default:
				paragraph = append(paragraph, trimmed)
			}
		case trimmed == "```":
			switch kind {
			case fenceRun:
				script := strings.Join(body, "\n") + "\n"
				s := step{line: start, script: script, background: strings.HasPrefix(script, secondTerminal), section: section}
				if first, rest, ok := strings.Cut(script, "\n"); strings.HasPrefix(first, stepCheck) {
					if err := checksStep(name, start, steps, lastKind, section, rest); err != nil {
						return nil, err
					}
					s.check = strings.TrimSpace(strings.TrimPrefix(first, stepCheck))
					if s.check == "" || !ok {
						return nil, fmt.Errorf("%s:%d: a step's check is a line %q followed by its commands", name, start, stepCheck+"<what it proves, in plain words>")
					}
				}
				steps = append(steps, s)
			case fenceOutput:
				if lastKind != fenceRun {
					above := "there is none"
					if lastKind != "" {
						above = "the block above is a ```" + lastKind
					}
					return nil, fmt.Errorf("%s:%d: a ```text block shows the output of the ```sh block just above it, and %s: move it under the ```sh block whose output it is, or make it prose", name, start, above)
				}
				prev := &steps[len(steps)-1]
				if prev.check != "" {
					return nil, fmt.Errorf("%s:%d: a ```text block follows the check of line %d, which says done or missing by its exit status alone: check the output in its commands (grep -x), or make it prose", name, start, prev.line)
				}
				if prev.background {
					return nil, fmt.Errorf("%s:%d: a ```text block follows the ```sh block of line %d, which runs in a second terminal until the lab ends: its output cannot be compared, so show it in prose", name, start, prev.line)
				}
				prev.want, prev.wantLine = body, start
			}
			lastKind, kind, paragraph, blank = kind, "", nil, false
		default:
			body = append(body, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if kind != "" {
		return nil, fmt.Errorf("%s:%d: the ```%s block is not closed: end it with a line ```", name, start, kind)
	}
	return steps, nil
}

// checksStep returns nil when a step's check, the ```sh block of line n in
// section, whose commands are script, may check the step before it: steps
// so far, the last block closed a lastKind.
func checksStep(name string, n int, steps []step, lastKind, section, script string) error {
	switch {
	case section == checkSection:
		return fmt.Errorf("%s:%d: in the ## %s section, a check starts with a line \"# <what it proves>\"; %q marks the check of a step, in the step's section", name, n, checkSection, stepCheck)
	case len(steps) == 0 || (lastKind != fenceRun && lastKind != fenceOutput):
		return fmt.Errorf("%s:%d: a step's check follows the ```sh block of its step (and that block's ```text block)", name, n)
	case steps[len(steps)-1].background:
		return fmt.Errorf("%s:%d: a step's check cannot check a block in a second terminal, which runs until the lab ends: check what the blocks after it do", name, n)
	case steps[len(steps)-1].section != section:
		return fmt.Errorf("%s:%d: a step's check is in the section of its step, under the ```sh block it checks", name, n)
	case strings.TrimSpace(script) == "":
		return fmt.Errorf("%s:%d: a step's check has no command", name, n)
	}
	return nil
}

// changes matches a command that changes the cluster: a step with one needs
// a check (uncheckedSteps).
var changes = regexp.MustCompile(`\bkubectl\b[^|;&]*?\s(?:apply|create|delete|patch|scale|label|annotate|replace|set|rollout|expose|run|cp|taint|cordon|uncordon|drain|edit)(?:\s|$)` +
	`|\bmake\s+(?:cluster-up|kind-up|olm-up|deploy|undeploy|install|uninstall)\b` +
	`|\bcurl\b.*\s-X\s*(?:POST|PUT|PATCH|DELETE)\b|\betcdctl\b.*\sput\s` +
	`|(?i:\b(?:insert\s+into|create\s+table|drop\s+table|delete\s+from)\b)`)

// changesCluster reports whether script changes the cluster: whether a line
// of it that is not a refusal (out=$(! ...), a server-side dry run) matches
// changes.
func changesCluster(script string) bool {
	for _, l := range strings.Split(script, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "#"), strings.HasPrefix(l, "out=$(!"), strings.HasPrefix(l, "! "), strings.Contains(l, "--dry-run"):
			continue
		}
		if changes.MatchString(l) {
			return true
		}
	}
	return false
}

// uncheckedSteps returns, for each step of a lab that changes the cluster
// and has no check, where it is: every such step has one, outside the
// Check section and a Clean up section.
func uncheckedSteps(name string, steps []step) []string {
	var out []string
	for i, s := range steps {
		if s.check != "" || s.background || s.section == checkSection || strings.Contains(strings.ToLower(s.section), "clean up") || !changesCluster(s.script) {
			continue
		}
		if i+1 < len(steps) && steps[i+1].check != "" {
			continue
		}
		out = append(out, fmt.Sprintf("%s:%d (## %s) changes the cluster and has no check: add a ```sh block under it that starts with %q", name, s.line, s.section, stepCheck+"<what it proves>"))
	}
	return out
}

// A check is one thing a learner should have achieved in a lab, and the
// commands that prove it: in a ```sh block of the lab's "## Check" section,
// a comment line "# <what this proves, in plain words>" starts a check, and
// the lines down to the next comment line are its commands.
type check struct {
	line   int    // of its comment line, from 1
	name   string // the comment, without its "#"
	script string // the lines under the comment, blank ones too (its line i is the lab's line+i), each ending in "\n"
}

// checks returns the checks of the lab named name, read from r with parse,
// so that the test runner and make lab-check read a lab alike. It refuses a
// lab with no "## Check" section or no ```sh block in it, a command before
// any comment (it would belong to no check), a comment with no command under
// it, a block in a second terminal, and a ```text block under a Check block:
// a check says done or missing by its commands' exit status alone.
func checks(name string, r io.Reader) ([]check, error) {
	steps, err := parse(name, r)
	if err != nil {
		return nil, err
	}
	var cs []check
	for _, s := range steps {
		if s.section != checkSection {
			continue
		}
		if s.background {
			return nil, fmt.Errorf("%s:%d: a check cannot run in a second terminal: make the block's commands end, or move the block out of the ## %s section", name, s.line, checkSection)
		}
		if s.wantLine != 0 {
			return nil, fmt.Errorf("%s:%d: a check says done or missing by its commands' exit status, and the ```text block of line %d would not count: check the output in the commands (grep -x), or make it prose", name, s.line, s.wantLine)
		}
		first := len(cs)
		for i, l := range strings.Split(strings.TrimSuffix(s.script, "\n"), "\n") {
			n := s.line + 1 + i
			switch trimmed := strings.TrimSpace(l); {
			case strings.HasPrefix(trimmed, "#"):
				if len(cs) > first && strings.TrimSpace(cs[len(cs)-1].script) == "" {
					last := cs[len(cs)-1]
					return nil, fmt.Errorf("%s:%d: the check %q has no command: put its commands under its comment, or remove the comment", name, last.line, last.name)
				}
				cs = append(cs, check{line: n, name: strings.TrimSpace(strings.TrimPrefix(trimmed, "#"))})
			case trimmed == "" && len(cs) == first:
			case len(cs) == first:
				return nil, fmt.Errorf("%s:%d: a command before any comment in the ## %s section: start each check with a line \"# <what it proves, in plain words>\"", name, n, checkSection)
			default:
				cs[len(cs)-1].script += l + "\n"
			}
		}
		if len(cs) == first {
			return nil, fmt.Errorf("%s:%d: the ```sh block holds no check: start each check with a line \"# <what it proves, in plain words>\"", name, s.line)
		}
		if last := cs[len(cs)-1]; strings.TrimSpace(last.script) == "" {
			return nil, fmt.Errorf("%s:%d: the check %q has no command: put its commands under its comment, or remove the comment", name, last.line, last.name)
		}
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("%s: no check: a lab has a \"## %s\" section whose ```sh blocks say what a learner should have achieved, each check a comment line \"# <what it proves>\" and the commands under it", name, checkSection)
	}
	return cs, nil
}

// title returns the text of a lab's first "# " heading, "" when it has none.
func title(lab []byte) string {
	for _, l := range strings.Split(string(lab), "\n") {
		if strings.HasPrefix(l, "# ") {
			return strings.TrimSpace(strings.TrimPrefix(l, "# "))
		}
	}
	return ""
}

// matches reports whether out, a block's output, is what want (the lines of
// its ```text block) shows. Each line of want matches one line of out, in
// order and with no line between them, but where want has a line "...",
// which stands for any number of lines; inside a line, "..." stands for any
// text. Runs of spaces count as one, so that a table's column widths do not
// matter; blank lines at either end of want do not count. want shows the
// whole output: one that shows only some of it starts or ends with "...".
func matches(want []string, out string) bool {
	w, got := shownAndPrinted(want, out)
	return matchLines(normalize(w), got)
}

// partsAt says where a block's output out stops being what want shows:
// the first line of want that the output, matched in order up to that
// line, does not have, or that the output goes on past want's last line.
// A failed lab says it last, where make test's summary shows it.
func partsAt(want []string, out string) string {
	w, got := shownAndPrinted(want, out)
	norm := normalize(w)
	for i := range norm {
		if !matchLines(append(slices.Clone(norm[:i+1]), gap), got) {
			return fmt.Sprintf("the output has nothing for the shown line %q", w[i])
		}
	}
	return "the output goes on after the shown lines"
}

// clientNote is a line kubectl's client library logs at its Info level
// (klog: "I1128 07:34:48.561667   17740 reflector.go:664] ..."), such as
// the watch that `kubectl wait` closes once its condition is met, which
// client-go sometimes reports as "watch ended with error ... context
// canceled". It is not the command's output, and its timing varies from
// run to run. Warnings and errors (W, E) are compared as any line.
var clientNote = regexp.MustCompile(`^I\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ [\w.-]+:\d+\] `)

// shownAndPrinted returns want without the blank lines at either end, and
// out's lines normalized, without kubectl's client notes (clientNote).
func shownAndPrinted(want []string, out string) ([]string, []string) {
	for len(want) > 0 && strings.TrimSpace(want[0]) == "" {
		want = want[1:]
	}
	for len(want) > 0 && strings.TrimSpace(want[len(want)-1]) == "" {
		want = want[:len(want)-1]
	}
	var got []string
	if out != "" {
		for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if !clientNote.MatchString(l) {
				got = append(got, l)
			}
		}
	}
	return want, normalize(got)
}

// matchLines matches want against the whole of got. ok[i][j] says whether
// want[i:] matches got[j:]; a gap line matches zero lines or one more.
func matchLines(want, got []string) bool {
	ok := make([][]bool, len(want)+1)
	for i := range ok {
		ok[i] = make([]bool, len(got)+1)
	}
	ok[len(want)][len(got)] = true
	for i := len(want) - 1; i >= 0; i-- {
		for j := len(got); j >= 0; j-- {
			if want[i] == gap {
				ok[i][j] = ok[i+1][j] || (j < len(got) && ok[i][j+1])
			} else {
				ok[i][j] = j < len(got) && matchLine(want[i], got[j]) && ok[i+1][j+1]
			}
		}
	}
	return ok[0][0]
}

// matchLine reports whether line is what pattern shows, "..." in pattern
// standing for any text.
func matchLine(pattern, line string) bool {
	parts := strings.Split(pattern, gap)
	if len(parts) == 1 {
		return pattern == line
	}
	if !strings.HasPrefix(line, parts[0]) {
		return false
	}
	rest := line[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return strings.HasSuffix(rest, parts[len(parts)-1])
}

// normalize trims each line and makes its runs of spaces one.
func normalize(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.Join(strings.Fields(l), " ")
	}
	return out
}

// inPlaceOf is a command of a lab's "On kind" line and the one it replaces.
var inPlaceOf = regexp.MustCompile("`([^`]+)` in place of `([^`]+)`")

// kindReplacer reads a lab's "On kind" line and returns what turns its
// blocks into those a learner runs on kind. It refuses a lab without the
// line, or whose line does not replace make cluster-up.
func kindReplacer(name string, lab []byte) (*strings.Replacer, error) {
	if l := kindLine(lab); l != "" {
		var pairs []string
		for _, m := range inPlaceOf.FindAllStringSubmatch(l, -1) {
			pairs = append(pairs, m[2], m[1])
		}
		for i := 0; i < len(pairs); i += 2 {
			if pairs[i] == "make cluster-up" {
				return strings.NewReplacer(pairs...), nil
			}
		}
		return nil, fmt.Errorf("%s: the %q line does not say what replaces `make cluster-up` on kind (\"`make kind-up` in place of `make cluster-up`\")", name, strings.TrimSpace(onKind))
	}
	return nil, fmt.Errorf("%s: no line starting %q says how the lab is done on kind: \"%s`make kind-up` in place of `make cluster-up`, and `make kind-down` in place of `make cluster-down`.\"", name, onKind, onKind)
}

// kindLine returns a lab's "On kind" line, "" when it has none.
func kindLine(lab []byte) string {
	for _, l := range strings.Split(string(lab), "\n") {
		if strings.HasPrefix(l, onKind) {
			return l
		}
	}
	return ""
}
