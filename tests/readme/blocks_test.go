package readme

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// ran holds every README command the tests ran (tests run one at a time).
var ran = map[string]bool{}

// command is one line of a shell block of the README.
type command struct {
	line int    // in README.md, from 1
	text string // without its trailing comment
	skip string // why no test runs it, from the marker above its block
}

// skipMarker, on the lines just above a ```sh block, names one of its
// commands that no test runs and says why, in the README's source:
//
//	<!-- not run by tests/readme: `make test`, the command that runs this test -->
var skipMarker = regexp.MustCompile("^<!-- not run by tests/readme: `([^`]+)`, (.+) -->$")

// commands returns the commands of the README's ```sh blocks with the
// reasons its markers give to skip some; a marker that names no command of
// the block below it is an error, so none outlives its command.
func commands(readme string) ([]command, error) {
	var (
		out     []command
		errs    []error
		skips   = map[string]string{} // markers waiting for their block
		inBlock bool
		block   []command
	)
	closeBlock := func(line int) {
		for cmd := range skips {
			errs = append(errs, fmt.Errorf("README.md:%d: a skip marker names `%s`, which the block below it does not show", line, cmd))
		}
		out = append(out, block...)
		block, skips = nil, map[string]string{}
	}
	for i, l := range strings.Split(readme, "\n") {
		n := i + 1
		switch {
		case inBlock && strings.HasPrefix(l, "```"):
			inBlock = false
			closeBlock(n)
		case inBlock:
			text := l
			if j := strings.Index(text, " #"); j >= 0 {
				text = text[:j]
			}
			if text = strings.TrimSpace(text); text == "" {
				continue
			}
			c := command{line: n, text: text}
			if why, ok := skips[text]; ok {
				c.skip = why
				delete(skips, text)
			}
			block = append(block, c)
		case l == "```sh":
			inBlock = true
		case skipMarker.MatchString(l):
			m := skipMarker.FindStringSubmatch(l)
			skips[m[1]] = m[2]
		case strings.HasPrefix(l, "<!-- not run by tests/readme"):
			errs = append(errs, fmt.Errorf("README.md:%d: a skip marker reads <!-- not run by tests/readme: `command`, reason -->", n))
		default:
			// Markers stand right above their block.
			for cmd := range skips {
				errs = append(errs, fmt.Errorf("README.md:%d: the skip marker of `%s` is not right above a ```sh block", n, cmd))
			}
			skips = map[string]string{}
		}
	}
	if inBlock {
		errs = append(errs, errors.New("README.md: a ```sh block is not closed"))
	}
	return out, errors.Join(errs...)
}

// everyCommandRan fails for each command of the README that no test ran and
// no marker explains, and lists the ones skipped with their reasons.
func everyCommandRan(path string) error {
	readme, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cmds, err := commands(string(readme))
	if err != nil {
		return err
	}
	var missing []error
	for _, c := range cmds {
		switch {
		case c.skip != "":
			fmt.Printf("README.md:%d: not run: `%s`, %s\n", c.line, c.text, c.skip)
		case !ran[c.text]:
			missing = append(missing, fmt.Errorf("README.md:%d: no test runs `%s`: run it in tests/readme, or say why not with a marker above its block", c.line, c.text))
		}
	}
	return errors.Join(missing...)
}

func TestCommandsAndSkipMarkers(t *testing.T) {
	readme := strings.Join([]string{
		"# Title",
		"",
		"```sh",
		"make run    # a comment",
		"",
		"kubectl get nodes",
		"```",
		"<!-- not run by tests/readme: `make bench`, it takes 25 minutes -->",
		"```sh",
		"make bench  # long",
		"make help",
		"```",
		"```yaml",
		"kind: Pod",
		"```",
	}, "\n")
	cmds, err := commands(readme)
	if err != nil {
		t.Fatal(err)
	}
	want := []command{
		{line: 4, text: "make run"},
		{line: 6, text: "kubectl get nodes"},
		{line: 10, text: "make bench", skip: "it takes 25 minutes"},
		{line: 11, text: "make help"},
	}
	if fmt.Sprint(cmds) != fmt.Sprint(want) {
		t.Errorf("commands:\n got %v\nwant %v", cmds, want)
	}

	for name, bad := range map[string]string{
		"stale":     "<!-- not run by tests/readme: `make gone`, old -->\n```sh\nmake run\n```",
		"detached":  "<!-- not run by tests/readme: `make run`, why -->\n\n```sh\nmake run\n```",
		"malformed": "<!-- not run by tests/readme: make run -->\n```sh\nmake run\n```",
		"unclosed":  "```sh\nmake run",
	} {
		if _, err := commands(bad); err == nil {
			t.Errorf("%s marker or block: no error", name)
		}
	}
}
