// Package faults injects, at points a seed chooses, the faults a cluster
// really has, while the operators do their work on the real node, and
// checks after each that nothing was lost and the status tells the truth:
//
//   - SIGKILL of an operator (started again after a moment, as its
//     Deployment would), of a Job's script, of a server or member pod;
//   - a volume deleted under its user: a MySQL's data or backup volume, an
//     etcd member's;
//   - the API server restarted (SIGTERM or SIGKILL, then started again);
//   - every watch dropped: the operators reach the API server through a
//     proxy on loopback that cuts their connections;
//   - an etcd member stopped (SIGSTOP) while the cluster is scaled down.
//
// Each seed runs one scenario per operator side by side, each in a
// namespace of its own. A scenario is a list of steps (create, write,
// change the spec, delete, create again); the seed draws, for each step,
// the fault and the moment it strikes. After the step's fault is over, the
// scenario waits for Ready with kubectl wait, bounded, and checks at once
// what Ready promises: the rows and keys written before are all there, the
// generated password has not changed, exactly N pods run, the objects
// that are not the operator's are untouched. A fault that struck once the
// step was carried out may not be seen yet when kubectl wait passes: the
// check then has a minute (holds); after a step with no fault, none.
//
// FAULTS_SEED=N runs seed N alone (a failing seed's schedule again: the
// same faults at the same moments of the same steps; the cluster's own
// timing still varies). FAULTS_SEEDS=a,b,c lists the seeds (default 1,2,
// what make test runs); FAULTS_FOR=1h then goes on with seeds drawn from
// the clock until that long has passed (make soak). Every seed is printed.
package faults

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

var (
	testEnv env.Environment
	suite   *cluster.Suite
	// skip is why pods cannot really run here; empty when they can.
	skip string
	// api is the proxy the operators reach the API server through.
	api *proxy
	// procs serialises the operators' kills and starts (the suite's
	// process table) and the API server's restarts.
	procs sync.Mutex
)

// operators are the ones started with the suite; etcd-cluster runs one
// instance per scenario, namespaced as the workshop runs it.
var operators = []string{"database", "gordon", "mysql-backup"}

func TestMain(m *testing.M) {
	var err error
	if suite, err = cluster.NewFaults(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testEnv = env.NewWithConfig(envconf.New())
	testEnv.Setup(suite.Setup(), throughProxy, func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if ok, why := suite.RealContainers(ctx); !ok {
			skip = why
			return ctx, nil
		}
		for _, op := range operators {
			if err := suite.StartOperator(ctx, op); err != nil {
				return ctx, err
			}
		}
		return ctx, nil
	})
	testEnv.Finish(func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		if api != nil {
			api.close()
		}
		return ctx, nil
	}, suite.Finish())
	os.Exit(testEnv.Run(m))
}

// throughProxy starts the proxy and writes a kubeconfig that reaches the
// API server through it, for the operators.
func throughProxy(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	if suite.Provider != cluster.Local {
		return ctx, fmt.Errorf("the faults suite restarts the API server and kills processes of the local cluster's real node: E2E_PROVIDER=%s", suite.Provider)
	}
	kc, err := clientcmd.LoadFromFile(suite.Kubeconfig())
	if err != nil {
		return ctx, err
	}
	kctx, ok := kc.Contexts[kc.CurrentContext]
	if !ok {
		return ctx, fmt.Errorf("%s has no current context", suite.Kubeconfig())
	}
	c := kc.Clusters[kctx.Cluster]
	server := strings.TrimPrefix(c.Server, "https://")
	if api, err = newProxy(server); err != nil {
		return ctx, err
	}
	c.Server = "https://" + api.addr()
	path := filepath.Join(suite.Root, "bin", "kubeconfig-local-"+suite.Name()+"-proxy")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return ctx, err
	}
	suite.OperatorsReach(path)
	return ctx, nil
}

// seeds are the seeds to run, from FAULTS_SEED or FAULTS_SEEDS.
func seeds() ([]uint64, error) {
	list := os.Getenv("FAULTS_SEED")
	if list == "" {
		list = os.Getenv("FAULTS_SEEDS")
	}
	if list == "" {
		list = "1,2"
	}
	var out []uint64
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("FAULTS_SEED(S)=%s: %w", list, err)
		}
		out = append(out, n)
	}
	return out, nil
}

func TestFaults(t *testing.T) {
	if skip != "" {
		if os.Getenv("E2E_REAL_NODE") == "required" {
			t.Fatal("E2E_REAL_NODE=required, but " + skip)
		}
		t.Skip("needs a real node: " + skip)
	}
	list, err := seeds()
	if err != nil {
		t.Fatal(err)
	}
	var soak time.Duration
	if v := os.Getenv("FAULTS_FOR"); v != "" && os.Getenv("FAULTS_SEED") == "" {
		if soak, err = time.ParseDuration(v); err != nil {
			t.Fatalf("FAULTS_FOR=%s: %v", v, err)
		}
	}
	start := time.Now()
	for i := 0; i < len(list) || time.Since(start) < soak; i++ {
		seed := uint64(time.Now().UnixNano() % 1_000_000_000)
		if i < len(list) {
			seed = list[i]
		}
		t.Logf("seed %d (rerun it alone with FAULTS_SEED=%d)", seed, seed)
		if !t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runSeed(t, seed) }) {
			t.Logf("seed %d failed: FAULTS_SEED=%d reruns its schedule", seed, seed)
		}
	}
	t.Logf("in %s, the faults that struck:\n%s", time.Since(start).Round(time.Second), tally.String())
}

// tally counts the faults that struck, by operator and kind, for the
// run's summary: which the seeds exercised.
var tally counts

type counts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counts) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
}

func (c *counts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(c.n)) {
		lines = append(lines, fmt.Sprintf("  %3d  %s", c.n[k], k))
	}
	return strings.Join(lines, "\n")
}

// A scenario is one operator's work under faults.
type scenario struct {
	name string
	run  func(r *run)
}

var scenarios = []scenario{
	{"mysql-backup", mysqlScenario},
	{"etcd-cluster", etcdScenario},
	{"database", databaseScenario},
	{"gordon", gordonScenario},
}

// runSeed runs every scenario side by side (t.Run from goroutines: -parallel
// does not limit them), each with its own draws from the seed, so that one
// scenario's schedule does not depend on another's.
func runSeed(t *testing.T, seed uint64) {
	var all sync.WaitGroup
	for i, sc := range scenarios {
		all.Go(func() {
			t.Run(sc.name, func(t *testing.T) {
				r := newRun(t, seed, uint64(i), sc.name)
				sc.run(r)
				if !t.Failed() {
					r.logf("%d faults injected, every check held", r.injected)
				}
			})
		})
	}
	all.Wait()
}

// run is one scenario's state: its namespace, its draws, its operator.
type run struct {
	t   *testing.T
	ctx context.Context
	// rng draws the schedule: each step's fault, its moment, how it
	// strikes. pick draws what depends on the cluster's state (which of
	// the pods there are now), so that the schedule stays the same
	// whatever the cluster's timing.
	rng, pick *rand.Rand
	ns        string
	scenario  string
	// op is the operator process the scenario's faults kill, and args
	// the flags it is started again with.
	op       string
	opArgs   []string
	opBinary string
	injected int
}

func newRun(t *testing.T, seed, index uint64, name string) *run {
	r := &run{
		t:        t,
		ctx:      context.Background(),
		rng:      rand.New(rand.NewPCG(seed, index)),
		pick:     rand.New(rand.NewPCG(seed, index+1<<32)),
		ns:       fmt.Sprintf("f%d-%s", seed, name),
		scenario: name,
		op:       name,
		opBinary: name,
	}
	// A namespace left by an earlier run of the same seed goes first.
	_, _ = r.try(time.Minute, "delete", "namespace", r.ns, "--ignore-not-found", "--timeout=3m")
	r.must("create", "namespace", r.ns)
	// Pods are refused until the namespace's ServiceAccount is there.
	end := time.Now().Add(time.Minute)
	for _, err := r.try(time.Minute, "get", "serviceaccount", "default", "-n", r.ns); err != nil; _, err = r.try(time.Minute, "get", "serviceaccount", "default", "-n", r.ns) {
		if time.Now().After(end) {
			t.Fatalf("namespace %s has no default ServiceAccount after a minute", r.ns)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Cleanup(func() {
		_, _ = suite.Run(context.Background(), "kubectl", "delete", "namespace", r.ns, "--wait=false")
	})
	return r
}

func (r *run) logf(format string, args ...any) {
	r.t.Helper()
	r.t.Logf("%s %s", time.Now().Format("15:04:05.0"), fmt.Sprintf(format, args...))
}

// A fault does one harm and says what it did, "" when it found nothing to
// act on (no Job's script ran in the window it waits).
type fault struct {
	name   string
	inject func(r *run) string
}

// step does one thing (an apply, a patch, a delete: what the user does,
// returning at once) while the fault the seed draws strikes, at a moment
// drawn between 0 and within into the step, or none (one step in six).
// It returns once both are over, with what the fault did ("" for none);
// the caller then waits for the outcome and checks it.
func (r *run) step(name string, within time.Duration, faults []fault, do func()) string {
	r.t.Helper()
	var f *fault
	if n := r.rng.IntN(len(faults)*6/5 + 1); n < len(faults) {
		f = &faults[n]
	}
	delay := time.Duration(r.rng.Int64N(int64(within)))
	done := make(chan string, 1)
	go func() {
		if f == nil {
			done <- ""
			return
		}
		time.Sleep(delay)
		done <- f.inject(r)
	}()
	do()
	what := <-done
	switch {
	case f == nil:
		r.logf("%s: no fault", name)
	case what == "":
		r.logf("%s: %s after %s found nothing to act on", name, f.name, delay.Round(100*time.Millisecond))
	default:
		r.injected++
		tally.add(r.scenario + ": " + f.name)
		r.logf("%s: %s after %s: %s", name, f.name, delay.Round(100*time.Millisecond), what)
	}
	return what
}

// The faults every scenario may draw: its operator killed, every watch
// dropped, the API server restarted.
func (r *run) common() []fault {
	return []fault{
		{"operator SIGKILL", func(r *run) string {
			procs.Lock()
			defer procs.Unlock()
			if err := suite.KillOperator(r.ctx, r.op); err != nil {
				r.t.Errorf("killing the %s operator: %v", r.op, err)
				return ""
			}
			pause := time.Duration(r.rng.IntN(3000)) * time.Millisecond
			time.Sleep(pause)
			if err := r.startOperator(); err != nil {
				r.t.Errorf("starting the %s operator again: %v", r.op, err)
			}
			return fmt.Sprintf("the %s operator killed, started again %s later", r.op, pause.Round(time.Millisecond))
		}},
		{"watches dropped", func(r *run) string {
			return fmt.Sprintf("%d connections of the operators cut", api.drop())
		}},
		{"API server restarted", func(r *run) string {
			sig := syscall.SIGTERM
			if r.rng.IntN(2) == 0 {
				sig = syscall.SIGKILL
			}
			procs.Lock()
			defer procs.Unlock()
			ctx, cancel := context.WithTimeout(r.ctx, 3*time.Minute)
			defer cancel()
			begin := time.Now()
			restarted, err := suite.RestartAPIServer(ctx, sig)
			if err != nil {
				r.t.Errorf("restarting the API server: %v", err)
			}
			return fmt.Sprintf("kube-apiserver stopped with %s; %s started again, settled in %s",
				sig, strings.Join(restarted, ", "), time.Since(begin).Round(100*time.Millisecond))
		}},
	}
}

// startOperator starts the scenario's operator and waits until its
// controllers start their workers (controller-runtime logs "Starting
// workers"), starting it again when it stops first, as the kubelet restarts
// a Deployment's pod whose operator exits: one that starts while the API
// server is away does. The caller holds procs.
func (r *run) startOperator() error {
	log := filepath.Join(suite.Root, "bin", "logs", "e2e-"+r.op+".log")
	for try := 1; ; try++ {
		var from int64
		if fi, err := os.Stat(log); err == nil {
			from = fi.Size()
		}
		if err := suite.StartInstance(r.ctx, r.op, r.opBinary, r.opArgs...); err != nil {
			return err
		}
		for end := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
			b, _ := os.ReadFile(log)
			since := string(b[min(from, int64(len(b))):])
			if strings.Contains(since, "Starting workers") {
				return nil
			}
			if strings.Contains(since, "operator stopped") {
				break
			}
			if time.Now().After(end) {
				return fmt.Errorf("the %s operator has not started its workers after 2 minutes: see %s", r.op, log)
			}
		}
		_ = suite.KillOperator(r.ctx, r.op) // reaps the process that exited
		if try == 5 {
			return fmt.Errorf("the %s operator stopped 5 times as it started: see %s", r.op, log)
		}
		r.logf("the %s operator stopped as it started (try %d); starting it again", r.op, try)
		time.Sleep(time.Duration(try) * time.Second)
	}
}

// holds checks what Ready promises, at once, after a step whose fault did
// what ("" for none). A fault that struck after the operator had carried
// out the step (a pod or volume deleted once Ready) may not be seen yet:
// Ready still describes the world before it. Then check is tried again for
// a minute, Ready awaited before each try, and fails only if it never
// holds: the status tells the truth within that bound. After a step with no
// fault, Ready must be true at once.
func (r *run) holds(what, object string, check func() error) {
	r.t.Helper()
	err := check()
	for end := time.Now().Add(time.Minute); err != nil && what != "" && time.Now().Before(end); err = check() {
		r.logf("not yet, the fault being recent: %v", err)
		time.Sleep(2 * time.Second)
		r.wait(object, 5*time.Minute)
	}
	if err != nil {
		r.t.Error(err)
	}
}

// killScript is the fault that SIGKILLs the first of a Job's scripts named
// in selves that runs within a minute, as a container crash or an OOM kill
// would.
func killScript(selves ...string) fault {
	return fault{"SIGKILL of a Job's script", func(r *run) string {
		for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			for _, self := range selves {
				if pid := suite.ScriptPID(r.ctx, r.ns, self); pid != 0 {
					if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
						return ""
					}
					return fmt.Sprintf("%s (pid %d) killed", self, pid)
				}
			}
		}
		return ""
	}}
}

// deletePods is the fault that deletes the pods selector selects, forced
// (as a node lost) or not, as the seed draws.
func deletePods(what, selector string) fault {
	return fault{"delete " + what, func(r *run) string {
		args := []string{"delete", "pods", "-n", r.ns, "-l", selector, "--wait=false"}
		how := "gracefully"
		if r.rng.IntN(2) == 0 {
			args, how = append(args, "--grace-period=0", "--force"), "forced"
		}
		out, err := r.try(time.Minute, args...)
		if err != nil || !strings.Contains(out, "deleted") {
			return ""
		}
		var deleted []string
		for _, line := range strings.Split(out, "\n") {
			if !strings.HasPrefix(line, "Warning:") && strings.TrimSpace(line) != "" {
				deleted = append(deleted, strings.TrimSpace(line))
			}
		}
		return strings.Join(deleted, ", ") + " (" + how + ")"
	}}
}

// deleteClaim is the fault that deletes a PersistentVolumeClaim under its
// user (it goes once no pod uses it).
func deleteClaim(name func(r *run) string) fault {
	return fault{"delete a volume", func(r *run) string {
		claim := name(r)
		if claim == "" {
			return ""
		}
		if _, err := r.try(time.Minute, "delete", "pvc", "-n", r.ns, claim, "--wait=false"); err != nil {
			return ""
		}
		return "pvc/" + claim + " deleted"
	}}
}

// transient says whether a kubectl failure is the API server or a pod
// being away for a moment (a restart, a dropped connection), to try again.
func transient(out string) bool {
	for _, s := range []string{
		"connection refused", "was refused", "connection reset", "EOF", "i/o timeout", "TLS handshake timeout",
		"the server is currently unable", "Unable to connect to the server", "http2: client connection lost",
		"the server was unable to return a response", "etcdserver: request timed out", "etcdserver: leader changed",
		"the object has been modified", "Internal error occurred", "apiserver is shutting down", "ServiceUnavailable",
	} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// try runs kubectl, again while it fails for a transient reason, for at
// most within.
func (r *run) try(within time.Duration, args ...string) (string, error) {
	end := time.Now().Add(within)
	for {
		out, err := suite.Run(r.ctx, "kubectl", args...)
		if err == nil || !transient(out) || time.Now().After(end) {
			return out, err
		}
		time.Sleep(time.Second)
	}
}

// must runs kubectl like try, for two minutes, and fails the scenario when
// kubectl fails.
func (r *run) must(args ...string) string {
	r.t.Helper()
	out, err := r.try(2*time.Minute, args...)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// wait is `kubectl wait --for=condition=Ready` on what, bounded by within:
// the bound the status must tell the truth in once the faults are over.
// An API server away for a moment does not count against it.
func (r *run) wait(what string, within time.Duration) {
	r.t.Helper()
	r.waitFor(what, "condition=Ready", within)
}

// waitFor is kubectl wait --for=condition on what, as wait.
func (r *run) waitFor(what, condition string, within time.Duration) {
	r.t.Helper()
	end := time.Now().Add(within)
	for {
		left := time.Until(end)
		out, err := suite.Run(r.ctx, "kubectl", "wait", "-n", r.ns, "--for="+condition, what, fmt.Sprintf("--timeout=%ds", max(int(left.Seconds()), 1)))
		if err == nil {
			return
		}
		if !transient(out) || time.Now().After(end) {
			status, _ := suite.Run(r.ctx, "kubectl", "get", "-n", r.ns, what, "-o", "jsonpath={.status}")
			r.explain()
			r.t.Fatalf("%s not %s within %s of the fault's end: %v\nstatus: %s", what, condition, within, err, status)
		}
		time.Sleep(time.Second)
	}
}

// explain logs what a person would look at when a check fails: the
// namespace's pods, Jobs and volumes, its events, and the last lines each
// Job's pods wrote (the scripts say what they waited on).
func (r *run) explain() {
	r.t.Helper()
	show := func(args ...string) {
		out, _ := suite.Run(context.Background(), "kubectl", append([]string{"-n", r.ns}, args...)...)
		r.t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
	}
	show("get", "pods,jobs,pvc", "-o", "wide")
	show("get", "events", "--sort-by=.lastTimestamp")
	jobs, err := suite.Run(context.Background(), "kubectl", "get", "-n", r.ns, "jobs", "-o", "name")
	if err != nil {
		return // the two above said why: the API server does not answer
	}
	for _, j := range strings.Fields(jobs) {
		show("logs", j, "--all-containers", "--tail=30")
	}
}

// untouched records what a user may have written on objects that are not
// the operator's (made by the scenario, with the labels of its children):
// identity, labels, annotations, owners, finalizers, deletion, data and
// spec. checkUntouched fails when any of it changed, or the object went.
type untouched map[string]string

const fingerprint = `jsonpath={.metadata.uid}|{.metadata.labels}|{.metadata.annotations}|{.metadata.ownerReferences}|` +
	`{.metadata.finalizers}|{.metadata.deletionTimestamp}|{.data}|{.spec}`

func (r *run) bystanders(objects ...string) untouched {
	u := untouched{}
	for _, o := range objects {
		u[o] = r.must("get", "-n", r.ns, o, "-o", fingerprint)
	}
	return u
}

func (r *run) checkUntouched(u untouched) {
	r.t.Helper()
	for o, was := range u {
		out, err := r.try(time.Minute, "get", "-n", r.ns, o, "-o", fingerprint)
		switch {
		case err != nil:
			r.t.Errorf("%s, which is not the operator's, is gone: %v", o, err)
		case out != was:
			r.t.Errorf("%s, which is not the operator's, was changed:\n now %s\n was %s", o, out, was)
		}
	}
}

// apply applies YAML text in the scenario's namespace.
func (r *run) apply(yaml string) {
	r.t.Helper()
	end := time.Now().Add(2 * time.Minute)
	for {
		cmd := suite.Command(r.ctx, "kubectl", "apply", "-n", r.ns, "-f", "-")
		cmd.Stdin = strings.NewReader(yaml)
		out, err := cmd.CombinedOutput()
		if err == nil {
			return
		}
		if !transient(string(out)) || time.Now().After(end) {
			r.t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
		time.Sleep(time.Second)
	}
}

// waitGone waits, bounded by within, until what is deleted.
func (r *run) waitGone(what string, within time.Duration) {
	r.t.Helper()
	end := time.Now().Add(within)
	for {
		out, err := suite.Run(r.ctx, "kubectl", "get", "-n", r.ns, what, "--ignore-not-found", "-o", "name")
		if err == nil && strings.TrimSpace(out) == "" {
			return
		}
		if err != nil && !transient(out) || time.Now().After(end) {
			status, _ := suite.Run(r.ctx, "kubectl", "get", "-n", r.ns, what, "-o", "jsonpath={.status}")
			r.explain()
			r.t.Fatalf("%s not gone within %s: %v\nstatus: %s", what, within, err, status)
		}
		time.Sleep(time.Second)
	}
}

// exec runs a command in a pod (kubectl exec), again while the pod or its
// server is away for a moment: restarted, not yet listening. A failure of
// the command itself (an SQL error, a key missing) is returned.
func (r *run) exec(target string, away []string, command ...string) (string, error) {
	r.t.Helper()
	return r.execIn(func() string { return target }, away, command...)
}

// execIn is exec in the pod target names at each try: a pod that went
// (a member removed) is not tried again.
func (r *run) execIn(target func() string, away []string, command ...string) (string, error) {
	r.t.Helper()
	end := time.Now().Add(3 * time.Minute)
	for {
		cmd := suite.Command(r.ctx, "kubectl", append([]string{"exec", "-n", r.ns, target(), "--"}, command...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err == nil {
			return string(out), nil
		}
		all := string(out) + stderr.String()
		retry := transient(all)
		// "exit code 137": the container was killed under the command, its
		// pod going (kubectl exec deploy/... may pick the old pod while it
		// stops, soak seed 233485945); the next try picks again.
		for _, s := range append(away, "unable to upgrade connection", "container not found", "not found", "does not have a host",
			"cannot exec into a container in a completed pod", "No such container", "is not running", "error dialing backend",
			"command terminated with exit code 137") {
			retry = retry || strings.Contains(all, s)
		}
		if !retry || time.Now().After(end) {
			return all, fmt.Errorf("kubectl exec -- %s: %w\n%s", strings.Join(command, " "), err, all)
		}
		time.Sleep(time.Second)
	}
}
