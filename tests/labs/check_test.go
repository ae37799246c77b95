package labs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/e2e-framework/klient/conf"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

// TestCheck is make lab-check: it runs the checks of lab $LAB (7 or 07)
// against the learner's cluster, the one their kubeconfig makes current
// ($KUBECONFIG, else ~/.kube/config, as kubectl reads it). Each check is
// an e2e-framework assessment of the lab's feature, and only reads; it
// prints "done: <name>", or "missing: <name>" and what its commands printed,
// and the test ends with "lab N: X of Y checks done". A lab with tasks
// (tasks.go) has one more assessment, which runs each task's checks on the
// learner's code in labs/tasks/work: these write, in a namespace or an API
// group of their own. Without LAB it skips: make test does not check
// anyone's cluster.
func TestCheck(t *testing.T) {
	arg := os.Getenv("LAB")
	if arg == "" {
		t.Skip("LAB is not set: make lab-check LAB=7 checks lab 7 against your current cluster")
	}
	root, labs := labFiles(t)
	n, path, err := findLab(labs, arg)
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join("labs", filepath.Base(path))
	cs, err := checks(file, bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	// e2e-framework's own resolution, as kubectl's: --kubeconfig, else the
	// first file of $KUBECONFIG that exists, else ~/.kube/config.
	kubeconfig := conf.ResolveKubeConfigFile()
	if kubeconfig == "" {
		t.Fatal("no kubeconfig: start the local cluster with make cluster-up (it makes its context current), or set KUBECONFIG to your cluster's kubeconfig file")
	}
	cache := os.Getenv("KUBECACHEDIR")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(home, ".kube", "cache") // kubectl's own default
	}
	// With $LAB_WORK, the learners' folder the checks name, labs/tasks/work/,
	// is elsewhere.
	work := strings.NewReplacer(defaultWork+"/", workDir()+"/")
	for i := range cs {
		cs[i].script = work.Replace(cs[i].script)
	}
	k := &checker{file: file, dir: root, env: cluster.Env(root, kubeconfig, cache), out: os.Stdout, timeout: 5 * time.Minute}
	// On a kind cluster (its context kind-NAME), the checks are the lab's
	// as its "On kind" line has them.
	current := exec.Command("kubectl", "config", "current-context")
	current.Dir, current.Env = root, k.env
	if ctx, err := current.Output(); err == nil && strings.HasPrefix(string(ctx), "kind-") {
		r, err := kindReplacer(file, text)
		if err != nil {
			t.Fatal(err)
		}
		for i := range cs {
			cs[i].script = r.Replace(cs[i].script)
		}
	}

	_, name, _ := strings.Cut(title(text), ": ") // "Lab 7: the gordon operator"
	feature := features.New(fmt.Sprintf("lab %d: %s", n, name)).
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			client, err := cfg.NewClient()
			if err != nil {
				t.Fatalf("the kubeconfig %s names no cluster this test can reach: %v", kubeconfig, err)
			}
			// The assessments get ctx, not this one, which ends with Setup.
			listCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := client.Resources().List(listCtx, &corev1.NamespaceList{}); err != nil {
				t.Fatalf("the cluster of your current context (kubeconfig %s) does not answer: %v\nStart it (make cluster-up), or make the context of the cluster you did the lab on current (kubectl config use-context)", kubeconfig, err)
			}
			_, _ = fmt.Fprintf(os.Stdout, "checking lab %d (%s) against %s (kubeconfig %s)\n", n, file, client.RESTConfig().Host, kubeconfig)
			return ctx
		})
	for _, c := range cs {
		feature = feature.Assess(c.name, func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			if !k.run(ctx, c) {
				t.Fail() // run said why; the summary says how many
			}
			return ctx
		})
	}
	// Then the lab's tasks, on the learner's copies of their starters.
	tasks, err := labTasks(file, text)
	if err != nil {
		t.Fatal(err)
	}
	var runs []*taskRun
	if len(tasks) > 0 {
		feature = feature.Assess("your tasks", func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			runs = runTasks(ctx, root, k.env, os.Stdout, tasks, func(task string) string { return filepath.Join(workDir(), task) })
			for _, r := range runs {
				if !r.allDone() {
					t.Fail() // the lines above say why
				}
			}
			return ctx
		})
	}
	env.NewWithConfig(envconf.New().WithKubeconfigFile(kubeconfig)).Test(t, feature.Feature())
	_, _ = fmt.Fprintln(os.Stdout, k.summary(n, len(cs)))
	for i, r := range runs {
		_, _ = fmt.Fprintln(os.Stdout, r.summary(tasks[i]))
	}
}

// TestChecker runs the checker on a fake lab, without a cluster, so that a
// check that fails is seen to say missing, with the output of its commands
// and the command that failed.
func TestChecker(t *testing.T) {
	tests := []struct {
		name   string
		script string
		done   bool
		want   string // what run writes; "..." in a line for text that varies
	}{
		{"a command that succeeds", "true", true, "done: a command that succeeds"},
		{"a command that fails", "false", false, "missing: a command that fails\n    (this failed: lab.md:9: false)"},
		{"what it printed, indented", "echo 'not there' >&2\n\ntest -n ''", false,
			"missing: what it printed, indented\n    not there\n    (this failed: lab.md:13: test -n '')"},
		{"a failure before a success", "false\ntrue", false, "missing: a failure before a success\n    (this failed: lab.md:15: false)"},
		{"a failure in a pipeline", "false | cat", false, "missing: a failure in a pipeline\n    (this failed: lab.md:18: false | cat)"},
		{"an unset variable", "echo \"$not_set\"", false, "missing: an unset variable\n    ...not_set: unbound variable"},
		{"a check that hangs", "sleep 30 | cat", false, "missing: a check that hangs\n    (stopped after 500ms: this check should take seconds)"},
		// sleep stands for the build: go vet never runs.
		{"a check that builds", "sleep 1 || go vet ./...", true, "done: a check that builds"},
	}
	var lab strings.Builder
	lab.WriteString("# Lab 0: fake\n\n## Check\n\n```sh\n")
	for _, tt := range tests {
		lab.WriteString("# " + tt.name + "\n" + tt.script + "\n")
	}
	lab.WriteString("```\n")
	cs, err := checks("lab.md", strings.NewReader(lab.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != len(tests) {
		t.Fatalf("got %d checks, want %d: %+v", len(cs), len(tests), cs)
	}
	var out bytes.Buffer
	k := &checker{file: "lab.md", dir: t.TempDir(), env: os.Environ(), out: &out, timeout: 500 * time.Millisecond}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out.Reset()
			if done := k.run(context.Background(), cs[i]); done != tt.done {
				t.Errorf("done = %v, want %v", done, tt.done)
			}
			if !matches(strings.Split(tt.want, "\n"), out.String()) {
				t.Errorf("wrote:\n%s\nwant:\n%s", out.String(), tt.want)
			}
		})
	}
	if got, want := k.summary(0, len(cs)), "lab 0: 2 of 8 checks done"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

func TestFindLab(t *testing.T) {
	labs := []string{"/r/labs/01-set-up.md", "/r/labs/07-gordon.md", "/r/labs/10-later.md"}
	tests := []struct {
		arg     string
		n       int
		lab     string
		wantErr string
	}{
		{arg: "7", n: 7, lab: "/r/labs/07-gordon.md"},
		{arg: "07", n: 7, lab: "/r/labs/07-gordon.md"},
		{arg: "10", n: 10, lab: "/r/labs/10-later.md"},
		{arg: "42", wantErr: "LAB=42: there is no lab 42; the labs are 1, 7, 10"},
		{arg: "gordon", wantErr: "LAB=gordon is not a lab's number"},
		{arg: "-1", wantErr: "LAB=-1 is not a lab's number"},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			n, lab, err := findLab(labs, tt.arg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || n != tt.n || lab != tt.lab {
				t.Errorf("findLab(%q) = %d, %q, %v; want %d, %q", tt.arg, n, lab, err, tt.n, tt.lab)
			}
		})
	}
}
