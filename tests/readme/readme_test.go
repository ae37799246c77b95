// Package readme runs the commands README.md and the pages of docs/ give, as
// a reader would type them, on a local cluster of their own and with a
// kubeconfig of their own, so the docs cannot drift from what works.
package readme

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

const clusterName = "readme"

type reader struct {
	t    *testing.T
	root string
	env  []string
	// docs is README.md and the pages of docs/, one after the other.
	docs string
	// running are the operators started with goRun, which must still run
	// after every command that follows: a section whose operator died at
	// once must not pass on what an earlier section left.
	running []*exec.Cmd
}

func newReader(t *testing.T) *reader {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	names, err := userDocs(root)
	if err != nil {
		t.Fatal(err)
	}
	var docs strings.Builder
	for _, name := range names {
		text, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		docs.WriteString("\n")
		docs.Write(text)
	}
	env := append(cluster.Env(root, kubeconfig, filepath.Join(t.TempDir(), "kubectl-cache")), "CLUSTER_NAME="+clusterName)
	return &reader{t: t, root: root, docs: docs.String(), env: env}
}

// kubeconfig is the readers' own, so the tests leave the user's alone.
var kubeconfig string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "readme-")
	if err != nil {
		panic(err)
	}
	kubeconfig = filepath.Join(dir, "kubeconfig")
	release, err := cluster.LockHost(func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) })
	if err != nil {
		panic(err)
	}
	code := m.Run()
	// The cluster's deletion uses none of the host's ports: another
	// run's lab goes on meanwhile.
	release()
	root, err := testenv.RepoRoot()
	if err != nil {
		panic(err)
	}
	// The README's own way to delete the cluster, last.
	down := exec.Command("make", "cluster-down")
	down.Dir = root
	down.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "CLUSTER_NAME="+clusterName)
	if out, err := down.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "make cluster-down: %v\n%s", err, out)
		code = 1
	} else {
		ran["make cluster-down"] = true
	}
	_ = os.RemoveAll(dir)
	// Every command the docs show ran, unless they say why not; only a
	// whole, passing run can tell.
	if code == 0 && flag.Lookup("test.run").Value.String() == "" {
		docs, err := userDocs(root)
		if err == nil {
			err = everyCommandRan(root, docs)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// shown fails the test unless the docs show line as a command.
func (r *reader) shown(line string) {
	r.t.Helper()
	if !strings.Contains(r.docs, "\n"+line) {
		r.t.Fatalf("neither README.md nor docs/ shows `%s` any more: update this test with them", line)
	}
}

// run runs a shell command line from the README in the repository root and
// returns its output, failing the test when it fails.
func (r *reader) run(line string) string {
	r.t.Helper()
	shown := strings.TrimPrefix(line, "RUN_EXIT_WHEN_READY=1 ")
	r.shown(shown)
	out := r.runUnshown(line)
	ran[shown] = true
	return out
}

// runUnshown runs a command the README does not show, a check of the test's.
func (r *reader) runUnshown(line string) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir, cmd.Env = r.root, r.env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	r.t.Logf("$ %s  (%s)\n%s", line, time.Since(start).Round(time.Millisecond), out)
	for _, op := range r.running {
		if exited(op.Process.Pid) {
			r.t.Fatalf("`%s` ended before the section did (it printed its output above, when the test ends)", strings.Join(op.Args[2:], " "))
		}
	}
	if err != nil {
		r.t.Fatalf("%s: %v", line, err)
	}
	return string(out)
}

// exited reports whether the process pid, a child of this one, has ended
// (a zombie until cluster.StopGroup waits for it).
func exited(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command's name in parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X'
}

func TestQuickStart(t *testing.T) {
	r := newReader(t)
	out := r.run("RUN_EXIT_WHEN_READY=1 make run")
	for _, want := range []string{"database.zalando.org/mongo-db: Ready", "pod/mongo-db", "service/mongo-db"} {
		if !strings.Contains(out, want) {
			t.Errorf("make run did not show %q", want)
		}
	}
	// The table kubectl prints: mongo-db of type mongo, Ready, with its port.
	if !containsRow(out, "mongo-db", "mongo", "True") {
		t.Errorf("make run did not show mongo-db Ready in `kubectl get databases`")
	}
	if !containsRow(out, "service/mongo-db", "NodePort", "27017:") {
		t.Errorf("make run did not show the NodePort Service of mongo-db")
	}
	if !containsRow(out, "gordoncluster", "3", "3", "3") {
		t.Errorf("make run did not show gordoncluster with 3 pods ready")
	}

	// A second cluster-up reuses the running cluster.
	start := time.Now()
	r.run("make cluster-up")
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("a second make cluster-up took %s; it should reuse the cluster", d)
	}
	if out := r.run("kubectl get nodes"); !containsRow(out, " Ready ") {
		t.Errorf("kubectl get nodes shows no Ready node")
	}
	if out := r.run("make help"); !containsRow(out, "cluster-up", "Start the local cluster") {
		t.Errorf("make help does not describe make cluster-up")
	}

	// The seed's cascade delete, with make run's operators stopped: the
	// garbage collector removes the Pod and the Service.
	r.run("kubectl delete -f operators/database/config/samples/mongo-db.yaml")
	r.runUnshown("kubectl wait --for=delete pod/mongo-db service/mongo-db --timeout=120s")
}

// containsRow reports whether a line of out holds every field, in order.
func containsRow(out string, fields ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		rest, ok := line, true
		for _, f := range fields {
			i := strings.Index(rest, f)
			if i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(f):]
		}
		if ok {
			return true
		}
	}
	return false
}

// goRun starts an operator with a `go run` line the README shows, as a reader
// would in a second terminal. stop sends it Ctrl-C and returns its output.
func (r *reader) goRun(line string) (stop func() string) {
	r.t.Helper()
	r.shown(line)
	op := exec.Command("bash", "-c", "exec "+line)
	op.Dir, op.Env = r.root, r.env
	logs := &strings.Builder{}
	op.Stdout, op.Stderr = logs, logs
	if err := cluster.StartGroup(op); err != nil {
		r.t.Fatal(err)
	}
	r.running = append(r.running, op)
	ran[line] = true
	stopped := false
	stop = func() string {
		if !stopped {
			stopped = true
			r.running = slices.DeleteFunc(r.running, func(c *exec.Cmd) bool { return c == op })
			cluster.StopGroup(op)
		}
		return logs.String()
	}
	r.t.Cleanup(func() {
		if out := stop(); r.t.Failed() {
			r.t.Logf("%s printed:\n%s", line, out)
		}
	})
	return stop
}

// docs/run-an-operator.md, command by command.
func TestRunOneOperator(t *testing.T) {
	r := newReader(t)
	r.run("make cluster-up")
	r.run("kubectl apply -f crds/")
	r.goRun("go run ./operators/database/cmd")
	// Its own state: nothing an earlier section (make run) left of the
	// sample, deleted by the operator just started (finalizers included).
	r.runUnshown("kubectl delete --ignore-not-found --wait -f operators/database/config/samples/mongo-db.yaml")

	r.run("kubectl apply -f operators/database/config/samples/mongo-db.yaml")
	r.run("kubectl wait --for=condition=Ready database/mongo-db")
	out := r.run("kubectl get db,pod,svc")
	for _, want := range []string{"database.zalando.org/mongo-db", "pod/mongo-db", "service/mongo-db"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get db,pod,svc does not show %s", want)
		}
	}
	r.run("kubectl delete -f operators/database/config/samples/mongo-db.yaml")
	r.runUnshown("kubectl wait --for=delete pod/mongo-db service/mongo-db --timeout=120s")
}

// docs/gordon.md, including the answer to "identify all
// Kubernetes API calls".
func TestGordonSection(t *testing.T) {
	r := newReader(t)
	r.run("make cluster-up")
	r.run("kubectl apply -f crds/")
	stop := r.goRun("go run ./operators/gordon/cmd -v=6")
	// Its own state: nothing an earlier section (make run) left of the
	// sample, deleted by the operator just started (finalizers included).
	r.runUnshown("kubectl delete --ignore-not-found --wait -f operators/gordon/config/samples/gordoncluster.yaml")

	r.run("kubectl apply -f operators/gordon/config/samples/gordoncluster.yaml")
	r.run("kubectl wait --for=condition=Ready gordon/gordoncluster")
	if out := r.run("kubectl get gordons"); !containsRow(out, "gordoncluster", "3", "3", "3") {
		t.Errorf("kubectl get gordons does not show gordoncluster with 3 desired, current and ready")
	}
	if out := r.run("kubectl get pods -l app.kubernetes.io/instance=gordoncluster"); strings.Count(out, "gordon-") != 3 {
		t.Errorf("want exactly 3 gordon pods")
	}
	r.run("kubectl scale gordon/gordoncluster --replicas=5")
	r.runUnshown("kubectl wait --for=jsonpath='{.status.readyReplicas}'=5 gordon/gordoncluster --timeout=120s")
	r.runUnshown("kubectl delete -f operators/gordon/config/samples/gordoncluster.yaml")
	r.runUnshown("kubectl wait --for=delete pods -l app.kubernetes.io/instance=gordoncluster --timeout=120s")

	// -v=6 shows each call: the pods it created, the status it wrote.
	logs := stop()
	for _, call := range []string{
		`"verb": "POST", "url": "https://`,
		`/api/v1/namespaces/default/pods`,
		`"verb": "PATCH"`,
		`/apis/operator.prgcont.cz/v1/namespaces/default/gordons/gordoncluster/status`,
	} {
		if !strings.Contains(logs, call) {
			t.Errorf("the -v=6 log does not show %s", call)
		}
	}
}

// docs/mysql-backup.md: the homework's create, delete and
// `kubectl get jobs`.
func TestMySQLSection(t *testing.T) {
	r := newReader(t)
	r.run("make cluster-up")
	r.run("kubectl apply -f crds/")
	r.goRun("go run ./operators/mysql-backup/cmd")
	// Its own state: nothing an earlier section (make run) left of the
	// sample, deleted by the operator just started (finalizers included).
	r.runUnshown("kubectl delete --ignore-not-found --wait -f operators/mysql-backup/config/samples/mysql-instance.yaml")

	r.run("kubectl apply -f operators/mysql-backup/config/samples/mysql-instance.yaml")
	r.run("kubectl wait --for=condition=Ready mysql/mysql-instance --timeout=3m")
	if out := r.run("kubectl get pvc"); !containsRow(out, "backup-mysql-instance-pvc", "Bound") || !containsRow(out, "mysql-instance-pvc", "Bound") {
		t.Errorf("kubectl get pvc should show both volumes Bound")
	}
	r.run("kubectl delete mysqls.otus.homework mysql-instance")
	if out := r.run("kubectl get jobs"); !containsRow(out, "backup-mysql-instance-job", "Complete", "1/1") {
		t.Errorf("kubectl get jobs should show backup-mysql-instance-job 1/1")
	}
}

// docs/etcd-cluster.md: the workshop's manifest makes three
// member pods with the workshop's labels. Without a real node they do not run
// etcd, and the cluster says so by staying in phase Creating.
func TestEtcdSection(t *testing.T) {
	r := newReader(t)
	r.run("make cluster-up")
	r.run("kubectl apply -f crds/")
	r.goRun("go run ./operators/etcd-cluster/cmd")
	// Its own state: nothing an earlier section (make run) left of the
	// sample, deleted by the operator just started (finalizers included).
	r.runUnshown("kubectl delete --ignore-not-found --wait -f operators/etcd-cluster/config/samples/example-etcd-cluster.yaml")

	r.run("kubectl apply -f operators/etcd-cluster/config/samples/example-etcd-cluster.yaml")
	r.runUnshown("kubectl wait --for=jsonpath='{.status.size}'=3 etcdcluster/example-etcd-cluster --timeout=120s")
	if out := r.run("kubectl get etcdclusters"); !containsRow(out, "example-etcd-cluster", "3", "3.2.13", "Creating") {
		t.Errorf("kubectl get etcdclusters should show example-etcd-cluster of size 3, version 3.2.13, Creating")
	}
	out := r.run("kubectl get po -l etcd_cluster=example-etcd-cluster")
	for i := range 3 {
		if !strings.Contains(out, fmt.Sprintf("example-etcd-cluster-%d ", i)) {
			t.Errorf("kubectl get po should list example-etcd-cluster-%d", i)
		}
	}
	r.runUnshown("kubectl delete -f operators/etcd-cluster/config/samples/example-etcd-cluster.yaml")
}
