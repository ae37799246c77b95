package labs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		lab     string
		want    []step
		wantErr string // a part of the error; "" when there is none
	}{{
		name: "sh blocks in order, prose and other blocks aside",
		lab: "# Lab\n\nSome prose.\n\n```sh\nmake cluster-up\nkubectl get nodes\n```\n\n" +
			"These are not run by make test, which runs offline:\n\n```console\nmake kind-up\n```\n\n```sh\nkubectl get pods\n```\n",
		want: []step{
			{line: 5, script: "make cluster-up\nkubectl get nodes\n"},
			{line: 16, script: "kubectl get pods\n"},
		},
	}, {
		name: "a second terminal",
		lab:  "```sh\n# in a second terminal\ngo run ./cmd\n```\n",
		want: []step{{line: 1, script: "# in a second terminal\ngo run ./cmd\n", background: true}},
	}, {
		name: "a text block is the output of the sh block above it, prose between",
		lab:  "```sh\necho hi\n```\n\nIt prints:\n\n```text\nhi\n```\n",
		want: []step{{line: 1, script: "echo hi\n", want: []string{"hi"}, wantLine: 7}},
	}, {
		name: "indented fences",
		lab:  "  ```sh\n  echo hi\n  ```\n",
		want: []step{{line: 1, script: "  echo hi\n"}},
	}, {
		name:    "an unknown fence is refused, not skipped",
		lab:     "```sh\necho hi\n```\n\n```bash\necho skipped\n```\n",
		wantErr: "lab.md:5: the fence \"```bash\" is not one the lab runner knows",
	}, {
		name:    "a fence with no info string is refused",
		lab:     "```\necho skipped\n```\n",
		wantErr: "lab.md:1: the fence \"```\" is not one",
	}, {
		name:    "an info string with more words is refused",
		lab:     "```sh title\necho hi\n```\n",
		wantErr: "lab.md:1: the fence \"```sh title\"",
	}, {
		name:    "a console block with no reason above it",
		lab:     "Run this:\n\n```console\nmake kind-up\n```\n",
		wantErr: "lab.md:3: a ```console block is not run by the test, and the paragraph just above it does not say why",
	}, {
		name:    "the reason must be in the paragraph just above",
		lab:     "These are not run.\n\nRun this:\n\n```console\nmake kind-up\n```\n",
		wantErr: "lab.md:5: a ```console block",
	}, {
		name:    "a text block under no block",
		lab:     "# Lab\n\n```text\nhi\n```\n",
		wantErr: "lab.md:3: a ```text block shows the output of the ```sh block just above it, and there is none",
	}, {
		name:    "a second text block",
		lab:     "```sh\necho hi\n```\n```text\nhi\n```\n```text\nhi\n```\n",
		wantErr: "lab.md:7: a ```text block shows the output of the ```sh block just above it, and the block above is a ```text",
	}, {
		name:    "a text block under a console block",
		lab:     "Not run here.\n```console\nmake kind-up\n```\n```text\nok\n```\n",
		wantErr: "the block above is a ```console",
	}, {
		name:    "a text block under a second terminal",
		lab:     "```sh\n# in a second terminal\nkubectl proxy\n```\n```text\nStarting to serve\n```\n",
		wantErr: "lab.md:5: a ```text block follows the ```sh block of line 1, which runs in a second terminal",
	}, {
		name:    "a block not closed",
		lab:     "```sh\necho hi\n```\n\n```sh\necho hi\n",
		wantErr: "lab.md:5: the ```sh block is not closed",
	}, {
		name: "a step's check, under its step's output",
		lab:  "## 1. A pod\n\n```sh\nkubectl run p --image=x\n```\n```text\npod/p created\n```\n```sh\n# check: the pod p exists\nkubectl get pod p\n```\n",
		want: []step{
			{line: 3, script: "kubectl run p --image=x\n", want: []string{"pod/p created"}, wantLine: 6, section: "1. A pod"},
			{line: 9, script: "# check: the pod p exists\nkubectl get pod p\n", section: "1. A pod", check: "the pod p exists"},
		},
	}, {
		name:    "a step's check first",
		lab:     "```sh\n# check: nothing\ntrue\n```\n",
		wantErr: "lab.md:1: a step's check follows the ```sh block of its step",
	}, {
		name:    "a step's check of a second terminal",
		lab:     "```sh\n# in a second terminal\nkubectl proxy\n```\n```sh\n# check: it serves\ncurl localhost:8001\n```\n",
		wantErr: "lab.md:5: a step's check cannot check a block in a second terminal",
	}, {
		name:    "a step's check in another section",
		lab:     "## 1\n```sh\ntrue\n```\n## 2\n```sh\n# check: x\ntrue\n```\n",
		wantErr: "lab.md:6: a step's check is in the section of its step",
	}, {
		name:    "a step's check with no command",
		lab:     "```sh\ntrue\n```\n```sh\n# check: x\n```\n",
		wantErr: "lab.md:4: a step's check has no command",
	}, {
		name:    "a step's check with an output",
		lab:     "```sh\ntrue\n```\n```sh\n# check: x\ntrue\n```\n```text\nx\n```\n",
		wantErr: "lab.md:8: a ```text block follows the check of line 4",
	}, {
		name:    "a step's check in the Check section",
		lab:     "## Check\n```sh\n# x\ntrue\n```\n```sh\n# check: x\ntrue\n```\n",
		wantErr: "lab.md:6: in the ## Check section, a check starts with",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse("lab.md", strings.NewReader(tt.lab))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestChecks(t *testing.T) {
	tests := []struct {
		name    string
		lab     string
		want    []check
		wantErr string // a part of the error; "" when there is none
	}{{
		name: "each comment starts a check, blank lines kept, other sections aside",
		lab: "# Lab 1: x\n\n## 1. Do\n\n```sh\n# not a check\nmake cluster-up\n```\n\n## Check\n\nProse.\n\n```sh\n" +
			"# the node is there\nkubectl get nodes\n\n#   the CRDs are established  \nkubectl get crd\nkubectl wait crd --all\n```\n\n## Why it works\n\n```sh\necho not a check\n```\n",
		want: []check{
			{line: 15, name: "the node is there", script: "kubectl get nodes\n\n"},
			{line: 18, name: "the CRDs are established", script: "kubectl get crd\nkubectl wait crd --all\n"},
		},
	}, {
		name: "several blocks, blank lines before the first comment",
		lab:  "## Check\n\n```sh\n\n# one\ntrue\n```\n\nThen:\n\n```sh\n# two\ntrue\n```\n",
		want: []check{{line: 5, name: "one", script: "true\n"}, {line: 12, name: "two", script: "true\n"}},
	}, {
		name: "a console block in the Check section is not a check",
		lab:  "## Check\n\n```sh\n# one\ntrue\n```\n\nNot run here:\n\n```console\nmake kind-up\n```\n",
		want: []check{{line: 4, name: "one", script: "true\n"}},
	}, {
		name:    "a lab with no Check section",
		lab:     "# Lab\n\n## 1. Do\n\n```sh\n# a comment\ntrue\n```\n",
		wantErr: "lab.md: no check: a lab has a \"## Check\" section",
	}, {
		name:    "a Check section in prose only",
		lab:     "## Check\n\n- the node is there\n",
		wantErr: "lab.md: no check",
	}, {
		name:    "a command before any comment",
		lab:     "## Check\n\n```sh\nkubectl get nodes\n# the node is there\ntrue\n```\n",
		wantErr: "lab.md:4: a command before any comment in the ## Check section",
	}, {
		name:    "a comment with no command",
		lab:     "## Check\n\n```sh\n# the node is there\n# the CRDs\nkubectl get crd\n```\n",
		wantErr: "lab.md:4: the check \"the node is there\" has no command",
	}, {
		name:    "a last comment with no command",
		lab:     "## Check\n\n```sh\n# the node is there\ntrue\n# the CRDs\n\n```\n",
		wantErr: "lab.md:6: the check \"the CRDs\" has no command",
	}, {
		name:    "a block with no check",
		lab:     "## Check\n\n```sh\n\n```\n",
		wantErr: "lab.md:3: the ```sh block holds no check",
	}, {
		name:    "a check in a second terminal",
		lab:     "## Check\n\n```sh\n# in a second terminal\nkubectl proxy\n```\n",
		wantErr: "lab.md:3: a check cannot run in a second terminal",
	}, {
		name:    "a text block under a check",
		lab:     "## Check\n\n```sh\n# hi\necho hi\n```\n\n```text\nhi\n```\n",
		wantErr: "lab.md:3: a check says done or missing by its commands' exit status, and the ```text block of line 8",
	}, {
		name:    "the parser's own errors",
		lab:     "## Check\n\n```bash\n# hi\necho hi\n```\n",
		wantErr: "lab.md:3: the fence \"```bash\" is not one the lab runner knows",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checks("lab.md", strings.NewReader(tt.lab))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestTitle(t *testing.T) {
	if got := title([]byte("# Lab 7: the gordon operator\n\n## 1. A cluster\n")); got != "Lab 7: the gordon operator" {
		t.Errorf("title = %q", got)
	}
	if got := title([]byte("## 1. A cluster\n")); got != "" {
		t.Errorf("title of a lab with no heading = %q, want \"\"", got)
	}
}

func TestMatches(t *testing.T) {
	const table = "NAME       TYPE    READY   NODEPORT   AGE\nmongo-db   mongo   True    31234      5s\n"
	tests := []struct {
		name string
		want string
		out  string
		ok   bool
	}{
		{"the same", "hi\nthere", "hi\nthere\n", true},
		{"a line differs", "hi\nthere", "hi\nthem\n", false},
		{"lines in another order", "there\nhi", "hi\nthere\n", false},
		{"a line missing from the output", "hi\nthere\nyou", "hi\nthere\n", false},
		{"an output line more at the end", "hi", "hi\nthere\n", false},
		{"an output line more at the start", "there", "hi\nthere\n", false},
		{"an output line more in the middle", "hi\nyou", "hi\nthere\nyou\n", false},
		{"gaps at both ends", "...\nthere\n...", "hi\nthere\nyou\n", true},
		{"a gap of no line", "hi\n...\nthere", "hi\nthere\n", true},
		{"a gap of lines", "hi\n...\nyou", "hi\nthere\nand\nyou\n", true},
		{"a gap keeps the order", "you\n...\nhi", "hi\nthere\nyou\n", false},
		{"a gap matches no line that is not there", "hi\n...\nme", "hi\nthere\nyou\n", false},
		{"columns of other widths", "NAME TYPE READY NODEPORT AGE\nmongo-db mongo True ... ...", table, true},
		{"text left out in a line", "NAME ... AGE\nmongo-db   mongo ...", table, true},
		{"text left out does not hide a difference", "NAME ... AGE\nmongo-db mysql ...", table, false},
		{"the text after a gap ends the line", "mongo-db ... True", table[strings.Index(table, "mongo-db"):], false},
		{"blank lines around the text block", "\nhi\n\n", "hi\n", true},
		{"a blank line inside counts", "hi\n\nthere", "hi\nthere\n", false},
		{"no output", "hi", "", false},
		{"no output shown, none printed", "", "", true},
		{"only a gap", "...", "anything\n", true},
		{"kubectl's client notes are not output", "created\ncondition met",
			"created\nI1128 07:34:48.561667   17740 reflector.go:664] \"Warning: watch ended with error\" err=\"context canceled\"\ncondition met\n", true},
		{"kubectl's warnings are output", "created\ncondition met",
			"created\nW1128 07:34:48.561667   17740 reflector.go:664] \"watch ended\"\ncondition met\n", false},
		{"a line that only starts like a note is output", "created", "created\nI1128 is not a note\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := matches(strings.Split(tt.want, "\n"), tt.out); got != tt.ok {
				t.Errorf("matches(%q, %q) = %v, want %v", tt.want, tt.out, got, tt.ok)
			}
		})
	}
}

// TestPartsAtNamesTheFirstLineNotPrinted: a lab whose block printed
// something else says which shown line the output lacks, the line a
// reader of make test's summary looks for.
func TestPartsAtNamesTheFirstLineNotPrinted(t *testing.T) {
	tests := []struct {
		name, want, out, parts string
	}{
		{"a line differs", "hi\nthere\nyou", "hi\nthem\nyou\n", `the output has nothing for the shown line "there"`},
		{"a line missing at the end", "hi\n...\nyou", "hi\nthere\n", `the output has nothing for the shown line "you"`},
		{"a table row not ready", "NAME READY\na 1/1\nb 1/1", "NAME  READY\na  1/1\nb  0/1\n", `the output has nothing for the shown line "b 1/1"`},
		{"more output than shown", "hi", "hi\nthere\n", "the output goes on after the shown lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := strings.Split(tt.want, "\n")
			if matches(want, tt.out) {
				t.Fatalf("matches(%q, %q): want no match", tt.want, tt.out)
			}
			if got := partsAt(want, tt.out); got != tt.parts {
				t.Errorf("partsAt(%q, %q) = %q, want %q", tt.want, tt.out, got, tt.parts)
			}
		})
	}
}

// TestLabsParse reads every lab, without a cluster, so that a fence the
// runner would refuse, a block bash cannot parse, or a Check section make
// lab-check cannot read, is found by `go test -short` too, including in the
// labs this machine cannot run.
func TestLabsParse(t *testing.T) {
	_, labs := labFiles(t)
	for _, lab := range labs {
		t.Run(strings.TrimSuffix(filepath.Base(lab), ".md"), func(t *testing.T) {
			file := filepath.Join("labs", filepath.Base(lab))
			text, err := os.ReadFile(lab)
			if err != nil {
				t.Fatal(err)
			}
			steps, err := parse(file, bytes.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			// Its first block runs before the host lock (runLab).
			if err := startsCluster(file, steps); err != nil {
				t.Error(err)
			}
			for _, s := range steps {
				out, err := exec.Command("bash", "-n", "-c", s.script).CombinedOutput()
				if err != nil {
					t.Errorf("%s:%d: bash -n: %v\n%s", file, s.line, err, out)
				}
			}
			// make lab-check runs each check alone: each must parse alone.
			cs, err := checks(file, bytes.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				out, err := exec.Command("bash", "-n", "-c", c.script).CombinedOutput()
				if err != nil {
					t.Errorf("%s:%d: the check %q alone: bash -n: %v\n%s", file, c.line, c.name, err, out)
				}
			}
			// Its "On kind" line replaces commands the lab runs.
			kind, err := kindReplacer(file, text)
			if err != nil {
				t.Fatal(err)
			}
			// Its first block builds the cluster's tools on a fresh
			// machine, locally and on kind: the runner gives it the
			// builds' time.
			for _, first := range []string{steps[0].script, kind.Replace(steps[0].script)} {
				if got := blockLimit(first); got < 30*time.Minute {
					t.Errorf("%s:%d: the runner gives the lab's first block %v, where its first run builds for up to 18 minutes:\n%s", file, steps[0].line, got, first)
				}
			}
			var scripts strings.Builder
			for _, s := range steps {
				scripts.WriteString(s.script)
			}
			line := kindLine(text)
			prose := strings.Replace(string(text), line, "", 1)
			for _, m := range inPlaceOf.FindAllStringSubmatch(line, -1) {
				if !strings.Contains(scripts.String(), m[2]) && !strings.Contains(prose, "`"+m[2]+"`") {
					t.Errorf("%s: its %q line replaces `%s`, which the lab neither runs nor names", file, strings.TrimSpace(onKind), m[2])
				}
			}
		})
	}
}

func TestBlockLimit(t *testing.T) {
	for script, want := range map[string]time.Duration{
		"export PATH=\"$PWD/bin:$PATH\"\nmake kind-up\n": 40 * time.Minute,
		"make olm-up\n": 40 * time.Minute,
		"scripts/build-tools.sh kubebuilder kubernetes etcd\n":  40 * time.Minute,
		"kubectl apply -f crds/\nkubectl wait --for=create x\n": 10 * time.Minute,
		"make cluster-down\n": 10 * time.Minute,
		"(cd labs/tasks/work/kubebuilder && go test ./internal/...)\n": 40 * time.Minute,
		"! make lab-check LAB=10\n":                                    40 * time.Minute,
		"kubectl get pods -l app=gordon -o name\n":                     10 * time.Minute,
	} {
		if got := blockLimit(script); got != want {
			t.Errorf("blockLimit(%q) = %v, want %v", script, got, want)
		}
	}
}

func TestStartsCluster(t *testing.T) {
	for _, tc := range []struct {
		steps []step
		ok    bool
	}{
		{[]step{{script: "make cluster-up\nmake olm-up\n"}, {script: "go run ./cmd\n"}}, true},
		{nil, false},
		{[]step{{script: "kubectl get nodes\n"}, {script: "make cluster-up\n"}}, false},
		{[]step{{script: "make cluster-up\nkubectl proxy >/tmp/proxy.log &\n"}}, false},
		{[]step{{script: "make cluster-up\ncurl -s localhost:8001/api\n"}}, false},
		{[]step{{script: "make cluster-up\n", background: true}}, false},
	} {
		if err := startsCluster("labs/x.md", tc.steps); (err == nil) != tc.ok {
			t.Errorf("startsCluster(%+v) = %v, want ok %v", tc.steps, err, tc.ok)
		}
	}
}

// TestStepChecks checks, without a cluster, that every step of every lab
// that changes the cluster has a check (the runner runs it before the step,
// where it must fail, and after, where it must pass).
func TestStepChecks(t *testing.T) {
	root, labs := labFiles(t)
	for _, lab := range labs {
		for _, msg := range uncheckedSteps(filepath.Join("labs", filepath.Base(lab)), readLab(t, root, lab)) {
			t.Error(msg)
		}
	}
}

// TestLabShape checks that every lab says what a learner needs before and
// after: its goal and time at the top, a Clean up section and a Why it
// works section.
func TestLabShape(t *testing.T) {
	_, labs := labFiles(t)
	for _, lab := range labs {
		text, err := os.ReadFile(lab)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`(?m)^\*\*Goal\*\*: `),
			regexp.MustCompile(`(?m)^\*\*Time\*\*: `),
			regexp.MustCompile(`(?m)^## (\d+\. )?Clean up$`),
			regexp.MustCompile(`(?m)^## Why it works$`),
		} {
			if !want.Match(text) {
				t.Errorf("labs/%s has no line matching %s: every lab says its goal and its time at the top (**Goal**: ..., **Time**: ...), and has a Clean up and a Why it works section", filepath.Base(lab), want)
			}
		}
	}
}

func TestChangesCluster(t *testing.T) {
	for script, want := range map[string]bool{
		"kubectl apply -f x.yaml":                         true,
		"kubectl -n etc delete pod p":                     true,
		"kubectl get pods":                                false,
		"kubectl get deploy create-db":                    false,
		"out=$(! kubectl create -f bad.yaml 2>&1)":        false,
		"kubectl create --dry-run=server -f x.yaml":       false,
		"make cluster-up":                                 true,
		"make lab-start LAB=7":                            false,
		"curl -s -X POST localhost:8001/api/v1/x":         true,
		"curl -s localhost:8001/api/v1/pods":              false,
		"kubectl exec p -- etcdctl put /here test":        true,
		"kubectl exec p -- mysql -e 'select * from test'": false,
		"kubectl exec p -- mysql -e \"INSERT INTO test\"": true,
		"kubectl scale gordon/g --replicas=5":             true,
	} {
		if got := changesCluster(script); got != want {
			t.Errorf("changesCluster(%q) = %v, want %v", script, got, want)
		}
	}
}

func TestKindReplacer(t *testing.T) {
	r, err := kindReplacer("lab.md", []byte("# Lab\n\n**On kind**: `make kind-up` in place of `make cluster-up`, and `scripts/kind.sh check` in place of `scripts/node.sh check`.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Replace("make cluster-up\nscripts/node.sh check\nmake cluster-down\n"), "make kind-up\nscripts/kind.sh check\nmake cluster-down\n"; got != want {
		t.Errorf("replaced %q, want %q", got, want)
	}
	for _, lab := range []string{
		"# Lab\n\nno line\n",
		"# Lab\n\n**On kind**: `make kind-down` in place of `make cluster-down`.\n",
	} {
		if _, err := kindReplacer("lab.md", []byte(lab)); err == nil {
			t.Errorf("%q: no error, want one", lab)
		}
	}
}

func TestExited(t *testing.T) {
	if exited(os.Getpid()) {
		t.Error("exited(this process) = true, want false")
	}
	running := exec.Command("sleep", "60")
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	if exited(running.Process.Pid) {
		t.Error("exited(a running process) = true, want false")
	}
	_ = running.Process.Kill()
	_ = running.Wait()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if !exited(cmd.Process.Pid) {
		t.Error("exited(a process that was waited for) = false, want true")
	}
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = zombie.Wait() }()
	for i := 0; !exited(zombie.Process.Pid); i++ {
		if i == 1000 {
			t.Fatal("exited(a process that ended and was not waited for) stays false")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
