package labs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/operator-workshops/workshop/operators/common/testenv"
)

// TestTaskLayout checks, without a cluster, that every task of labs/tasks
// has a starter, a reference solution and checks, and is named by one lab,
// and that every task a lab names exists.
func TestTaskLayout(t *testing.T) {
	root, labs := labFiles(t)
	named := map[string][]string{}
	for _, lab := range labs {
		text, err := os.ReadFile(lab)
		if err != nil {
			t.Fatal(err)
		}
		tasks, err := labTasks(filepath.Base(lab), text)
		if err != nil {
			t.Error(err)
		}
		for _, task := range tasks {
			named[task] = append(named[task], filepath.Base(lab))
		}
	}
	entries, err := os.ReadDir(filepath.Join(root, "labs", "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "work" {
			continue
		}
		dirs[e.Name()] = true
		for _, side := range []string{"starter", "solution"} {
			if _, err := os.Stat(filepath.Join(root, "labs", "tasks", e.Name(), side)); err != nil {
				t.Errorf("task %s has no %s: %v", e.Name(), side, err)
			}
		}
		if taskSuites[e.Name()] == nil {
			t.Errorf("task %s has no checks in taskSuites (tests/labs/tasks.go)", e.Name())
		}
		if len(named[e.Name()]) != 1 {
			t.Errorf("task %s is named by %d labs (%v): a task belongs to one lab, in its %s... --> line", e.Name(), len(named[e.Name()]), named[e.Name()], tasksMarker)
		}
	}
	for task, labs := range named {
		if !dirs[task] {
			t.Errorf("%v name task %s, and labs/tasks/%s does not exist", labs, task, task)
		}
	}
}

func TestLabTasks(t *testing.T) {
	got, err := labTasks("lab.md", []byte("# Lab\n\n<!-- tasks: gordon mysql-crd -->\ntext\n"))
	if err != nil || strings.Join(got, " ") != "gordon mysql-crd" {
		t.Errorf("labTasks = %q, %v; want gordon mysql-crd", got, err)
	}
	for _, bad := range []string{"<!-- tasks: gordon", "<!-- tasks: nothing -->"} {
		if _, err := labTasks("lab.md", []byte(bad+"\n")); err == nil {
			t.Errorf("labTasks(%q) took it", bad)
		}
	}
}

func TestCall(t *testing.T) {
	for path, want := range map[string]string{
		"/api":                                   "GET /api",
		"/apis":                                  "GET /apis",
		"/apis/operator.prgcont.cz/v1":           "GET /apis/operator.prgcont.cz/v1",
		"/api/v1/pods":                           "GET /api/v1/pods",
		"/api/v1/namespaces/default/pods":        "GET /api/v1/namespaces/{namespace}/pods",
		"/api/v1/namespaces/x/pods/gordon-abcde": "GET /api/v1/namespaces/{namespace}/pods/{name}",
		"/apis/operator.prgcont.cz/v1/namespaces/x/gordons/gordoncluster/status": "GET /apis/operator.prgcont.cz/v1/namespaces/{namespace}/gordons/{name}/status",
		"/api/v1/namespaces/lab-07-tasks":                                        "GET /api/v1/namespaces/{name}",
		"/apis/operator.prgcont.cz/v1/gordons":                                   "GET /apis/operator.prgcont.cz/v1/gordons",
	} {
		if got := call("GET", path); got != want {
			t.Errorf("call(GET, %s) = %s, want %s", path, got, want)
		}
	}
}

func TestParseCalls(t *testing.T) {
	told, err := parseCalls("calls.txt", `# a comment

get /api/v1/namespaces/default/pods?watch=true  watches the pods
POST /api/v1/namespaces/{namespace}/pods: creates a pod
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GET /api/v1/namespaces/{namespace}/pods", "POST /api/v1/namespaces/{namespace}/pods"} {
		if !told[want] {
			t.Errorf("parseCalls did not read %s: %v", want, told)
		}
	}
	for _, bad := range []string{"GET /api", "GET api/v1/pods lists pods"} {
		if _, err := parseCalls("calls.txt", bad); err == nil {
			t.Errorf("parseCalls took %q", bad)
		}
	}
}

// TestExplained checks task 1's check on a log and a calls.txt: the
// solution's calls.txt explains a log of every request it names, and a
// calls.txt that misses one kind is missing.
func TestExplained(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "operator.log")
	lines := []string{
		`I1126 04:00:00.000000  1 round_trippers.go:632] "Response" verb="GET" url="x"`,
		`{"level":"debug","msg":"Response","verb": "GET", "url": "https://127.0.0.1:6443/api/v1/namespaces/lab-07-tasks/pods?labelSelector=x", "status": "200 OK"}`,
		`{"verb": "POST", "url": "https://127.0.0.1:6443/api/v1/namespaces/lab-07-tasks/pods", "status": "201 Created"}`,
	}
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(text string) string {
		if err := os.WriteFile(filepath.Join(dir, "calls.txt"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return "calls.txt"
	}
	if err := explained(dir, write("GET /api/v1/namespaces/{namespace}/pods lists\nPOST /api/v1/namespaces/default/pods creates\n"), log); err != nil {
		t.Errorf("both kinds explained: %v", err)
	}
	err := explained(dir, write("POST /api/v1/namespaces/default/pods creates\n"), log)
	if err == nil || !strings.Contains(err.Error(), "made 2 kinds of request in this check, and calls.txt explains 1 of them") {
		t.Errorf("one kind of two explained: %v", err)
	}

	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	solution := filepath.Join("labs", "tasks", "gordon", "solution", "calls.txt")
	text, err := os.ReadFile(filepath.Join(root, solution))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseCalls(solution, string(text)); err != nil {
		t.Errorf("the reference solution's calls.txt: %v", err)
	}
}

// TestCheckCopy checks, without a cluster, that lab 5's task check takes
// the starter's and the solution's CRD, puts its copy in the check's group,
// and says what is wrong with a CRD that is not the homework's.
func TestCheckCopy(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{"starter", "solution"} {
		text, err := os.ReadFile(filepath.Join(root, "labs", "tasks", "mysql-crd", side, "crd.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		out, err := checkCopy(text)
		if err != nil {
			t.Errorf("%s: %v", side, err)
		}
		if !strings.Contains(string(out), "name: "+checkPlural+"."+checkGroup) || !strings.Contains(string(out), "group: "+checkGroup) || !strings.Contains(string(out), "kind: "+checkKind) {
			t.Errorf("%s: the copy is not in the check's group:\n%s", side, out)
		}
		for _, c := range []struct{ old, new, want string }{
			{"kind: MySQL", "kind: MyDB", "spec.names.kind is MyDB, not MySQL"},
			{"scope: Namespaced", "scope: Cluster", "spec.scope is Cluster, not Namespaced"},
			{"storage: true", "storage: false", "no version v1 with served: true and storage: true"},
		} {
			bad := strings.Replace(string(text), c.old, c.new, 1)
			if _, err := checkCopy([]byte(bad)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s with %q for %q: %v, want %q", side, c.new, c.old, err, c.want)
			}
		}
	}
}

// TestUntilWaitsLongerEachTime checks the waits between a check's calls:
// half a second first, growing by half, never more than 3 seconds, so that
// a starter's check that never passes sends about 30 commands in 90
// seconds.
func TestUntilWaitsLongerEachTime(t *testing.T) {
	var waits []time.Duration
	var total time.Duration
	for w := untilFirst; total < 90*time.Second; w = untilNext(w) {
		waits = append(waits, w)
		total += w
	}
	want := []time.Duration{500 * time.Millisecond, 750 * time.Millisecond, 1125 * time.Millisecond, 1687500 * time.Microsecond, 2531250 * time.Microsecond, 3 * time.Second, 3 * time.Second}
	if !slices.Equal(waits[:len(want)], want) {
		t.Errorf("the first waits are %v, want %v", waits[:len(want)], want)
	}
	if n := len(waits); n < 25 || n > 35 {
		t.Errorf("%d calls in 90 seconds of waits, want about 30", n)
	}
}
