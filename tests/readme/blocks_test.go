package readme

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ran holds every command of the docs the tests ran (tests run one at a
// time).
var ran = map[string]bool{}

// command is one line of a shell block of a doc.
type command struct {
	line int    // in its doc, from 1
	text string // without its trailing comment
	skip string // why no test runs it, from the marker above its block
}

// skipMarker, on the lines just above a ```sh block, names one of its
// commands that no test runs and says why, in the README's source:
//
//	<!-- not run by tests/readme: `make test`, the command that runs this test -->
var skipMarker = regexp.MustCompile("^<!-- not run by tests/readme: `([^`]+)`, (.+) -->$")

// commands returns the commands of the ```sh blocks of the doc name (its
// path from the repository root, for errors) with the reasons its markers
// give to skip some; a marker that names no command of the block below it
// is an error, so none outlives its command.
func commands(name, readme string) ([]command, error) {
	var (
		out     []command
		errs    []error
		skips   = map[string]string{} // markers waiting for their block
		inBlock bool
		block   []command
	)
	closeBlock := func(line int) {
		for cmd := range skips {
			errs = append(errs, fmt.Errorf("%s:%d: a skip marker names `%s`, which the block below it does not show", name, line, cmd))
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
			errs = append(errs, fmt.Errorf("%s:%d: a skip marker reads <!-- not run by tests/readme: `command`, reason -->", name, n))
		default:
			// Markers stand right above their block.
			for cmd := range skips {
				errs = append(errs, fmt.Errorf("%s:%d: the skip marker of `%s` is not right above a ```sh block", name, n, cmd))
			}
			skips = map[string]string{}
		}
	}
	if inBlock {
		errs = append(errs, fmt.Errorf("%s: a ```sh block is not closed", name))
	}
	return out, errors.Join(errs...)
}

// everyCommandRan fails for each command of the docs (docs: their paths
// from root) that no test ran and no marker explains, and lists the ones
// skipped with their reasons.
func everyCommandRan(root string, docs []string) error {
	var missing []error
	for _, name := range docs {
		text, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return err
		}
		cmds, err := commands(name, string(text))
		if err != nil {
			return err
		}
		for _, c := range cmds {
			switch {
			case c.skip != "":
				fmt.Printf("%s:%d: not run: `%s`, %s\n", name, c.line, c.text, c.skip)
			case !ran[c.text]:
				missing = append(missing, fmt.Errorf("%s:%d: no test runs `%s`: run it in tests/readme, or say why not with a marker above its block", name, c.line, c.text))
			}
		}
	}
	return errors.Join(missing...)
}

// userDocs are the docs whose commands the tests run, from the repository
// root: README.md, then docs/*.md.
func userDocs(root string) ([]string, error) {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	docs := []string{"README.md"}
	for _, p := range pages {
		docs = append(docs, filepath.Join("docs", filepath.Base(p)))
	}
	return docs, nil
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
	cmds, err := commands("README.md", readme)
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
		if _, err := commands("README.md", bad); err == nil {
			t.Errorf("%s marker or block: no error", name)
		}
	}
}

// The commands of docs/ count as the README's: one no test ran fails the
// run, named by its page and line.
func TestEveryCommandRanReadsDocs(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"README.md":       "```sh\nmake run\n```\n",
		"docs/example.md": "# A page\n\n```sh\nkubectl get example\n```\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	docs, err := userDocs(root)
	if err != nil || fmt.Sprint(docs) != "[README.md docs/example.md]" {
		t.Fatalf("userDocs = %v (%v)", docs, err)
	}
	before := ran["make run"]
	ran["make run"] = true
	defer func() { ran["make run"] = before }()
	err = everyCommandRan(root, docs)
	if err == nil || !strings.Contains(err.Error(), "docs/example.md:4: no test runs `kubectl get example`") {
		t.Errorf("a command of docs/ that no test ran: %v", err)
	}
}
