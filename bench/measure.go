package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// settings are the run's flags that every measure shares.
type settings struct {
	root    string
	cluster string
	qps     float64
	burst   int
	workers int
	idle    time.Duration
	timeout time.Duration
}

// result is one operator's line of the report; bench/README.md says what
// each figure means.
type result struct {
	CRs              int      `json:"crs"`
	Done             string   `json:"done"`
	Seconds          float64  `json:"seconds"`
	CreatedSeconds   *float64 `json:"created_seconds,omitempty"`
	P50Ms            float64  `json:"p50_ms"`
	P99Ms            float64  `json:"p99_ms"`
	Writes           int      `json:"writes"`
	Reads            int      `json:"reads"`
	WritesPerCR      float64  `json:"writes_per_cr"`
	ReadsPerCR       float64  `json:"reads_per_cr"`
	RequestsByMethod requests `json:"requests_by_method"`
	// RequestsByCode are the same by method and the status code they were
	// answered with: "GET 404" is a read of what does not exist, "PATCH
	// 409" a write refused for a conflict.
	RequestsByCode requests `json:"requests_by_code"`
	IdleSeconds    float64  `json:"idle_seconds"`
	IdleWrites     int      `json:"idle_writes"`
	// IdleRequestsByMethod are the requests of the idle stretch.
	IdleRequestsByMethod requests `json:"idle_requests_by_method,omitempty"`
	PeakRSSMiB           float64  `json:"peak_rss_mib"`
	// RSSFileMiB and RSSAnonMiB split the resident memory at the end of
	// the idle stretch: the pages mapped from files (the operator's
	// executable, mostly: clean pages shared with the kernel's page cache)
	// and the rest (the Go heap with the garbage collector's headroom,
	// stacks, the runtime's own). HeapLiveMiB is the heap the operator held
	// after its last garbage collection at convergence.
	RSSFileMiB  float64 `json:"rss_file_mib"`
	RSSAnonMiB  float64 `json:"rss_anon_mib"`
	HeapLiveMiB float64 `json:"heap_live_mib"`
	// CPUSeconds is the operator's CPU time, user and system, from its
	// start to the end of the idle stretch.
	CPUSeconds   float64 `json:"cpu_seconds"`
	RSSPerCRKiB  float64 `json:"rss_per_cr_kib"`
	FloorSeconds float64 `json:"floor_seconds"`
	// FloorSettledSeconds, for a workload with a settled rule, is the time
	// from the floor's first create until the cluster had done that with
	// every child the floor made (its Deployments available, its Jobs
	// succeeded): what the cluster's own controllers take for what a CR
	// needs of them, in no order.
	FloorSettledSeconds *float64 `json:"floor_settled_seconds,omitempty"`
	FloorWritesPerCR    float64  `json:"floor_writes_per_cr"`
	// BusyPercent and FloorBusyPercent are the share of the machine's CPU
	// time spent busy, by every process (the API server, etcd, kwok, the
	// cluster's controllers, the operator or the floor), while the
	// operator converged and while the floor's writes ran: near 100, the
	// machine's CPUs, not a client's limits, bounded the run.
	BusyPercent      float64     `json:"busy_percent"`
	FloorBusyPercent float64     `json:"floor_busy_percent"`
	RatioToFloor     float64     `json:"ratio_to_floor"`
	Seed             *seedResult `json:"seed,omitempty"`
	SpeedupVsSeed    *float64    `json:"speedup_vs_seed,omitempty"`
	// HeapProfile names the file of the operator's heap at convergence.
	HeapProfile string `json:"heap_profile,omitempty"`
	latencies   []time.Duration
	heap        []byte // go tool pprof -top of that heap
}

// absurd returns what in r no real run can measure, "" when nothing: a
// figure missing or zero where the work cannot cost nothing (every CR
// needs a write, the floor writes, the operator runs and holds memory),
// or out of order. A harness that stopped measuring something fails here,
// in bench-smoke, instead of printing a zero.
func (r *result) absurd() string {
	var bad []string
	for _, f := range []struct {
		name string
		ok   bool
	}{
		{"crs", r.CRs > 0},
		{"seconds", r.Seconds > 0},
		{"writes per CR at least 1", r.WritesPerCR >= 1 && r.Writes >= r.CRs},
		{"reads", r.Reads > 0},
		{"p50 <= p99, both above 0", r.P50Ms > 0 && r.P50Ms <= r.P99Ms},
		{"peak RSS", r.PeakRSSMiB > 0},
		{"CPU seconds", r.CPUSeconds > 0},
		{"floor seconds", r.FloorSeconds > 0},
		{"floor writes per CR at least 1", r.FloorWritesPerCR >= 1},
		{"ratio to the floor", r.RatioToFloor > 0},
		{"seed seconds", r.Seed == nil || r.Seed.Seconds > 0 && r.Seed.Pods > 0},
	} {
		if !f.ok {
			bad = append(bad, f.name)
		}
	}
	return strings.Join(bad, ", ")
}

// nodes is how many fake nodes pods pods need: kwok's nodes take 110 pods
// each; one more leaves room.
func nodes(pods int) int { return pods/100 + 2 }

// measure runs operator w.operator on a fresh cluster over w's CRs, then the
// floor on another.
func measure(ctx context.Context, s settings, w workload) (*result, error) {
	c := &cluster{root: s.root, name: s.cluster}
	defer func() { _ = c.down(context.WithoutCancel(ctx)) }()
	say("%s: a fresh cluster with %d fake nodes", w.operator, nodes(w.count*w.podsPerCR))
	if err := c.fresh(ctx, nodes(w.count*w.podsPerCR), "crds/"); err != nil {
		return nil, err
	}
	dyn, err := c.dynamic()
	if err != nil {
		return nil, err
	}
	op, err := startOperator(ctx, c, w.operator, s)
	if err != nil {
		return nil, err
	}
	defer op.stop()
	base, err := memory(op.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}

	r := &result{CRs: w.count, Done: w.done}
	if err := converge(ctx, s, dyn, w, op, r); err != nil {
		return nil, err
	}
	say("%s: all %d done in %.1fs; idle for %s", w.operator, w.count, r.Seconds, s.idle)
	if err := idleAndMemory(ctx, s, w, op, base.rss, r); err != nil {
		return nil, err
	}
	op.stop()

	p, err := capture(ctx, dyn, namespace, w.gvr, w.kind)
	if err != nil {
		return nil, err
	}
	if d := p.differs(w.floor); d != "" {
		return nil, fmt.Errorf("%s: what the operator left is not what a %s strictly costs, counted by hand (bench/workload.go): %s", w.operator, w.kind, d)
	}
	f, err := floor(ctx, s, c, w, p)
	if err != nil {
		return nil, err
	}
	r.FloorSeconds, r.FloorSettledSeconds, r.FloorBusyPercent = round(f.seconds, 2), f.settled, f.busy
	r.FloorWritesPerCR = per(p.writes(), w.count)
	r.RatioToFloor = round(r.Seconds/r.FloorSeconds, 2)
	return r, nil
}

// converge creates w's CRs and waits until every one is done (and, for a
// workload with a created rule, has its children), recording the times.
func converge(ctx context.Context, s settings, dyn dynamic.Interface, w workload, op *process, r *result) error {
	t := newTracker(w.count)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watchDone(watchCtx, dyn, namespace, w.gvr, w.kind, ready, w.children, t)
	made := newTracker(w.count)
	if w.created != nil {
		watchDone(watchCtx, dyn, namespace, w.gvr, w.kind, nil, w.created, made)
	}
	say("%s: creating %d %ss", w.operator, w.count, w.kind)
	made.begin()
	busy, err := startBusy()
	if err != nil {
		return err
	}
	tell := func(cr *unstructured.Unstructured) { made.markCreated(cr.GetName(), cr.GetUID()) }
	if err := createAll(ctx, dyn, w.gvr, namespace, objects(w), t, tell); err != nil {
		return err
	}
	if err := waitAll(ctx, w.operator, t, s.timeout, op.alive); err != nil {
		return fmt.Errorf("%w (the operator's log: %s)", err, logFile(s.root, w.operator))
	}
	if r.BusyPercent, err = busy.percent(); err != nil {
		return err
	}
	if w.created != nil {
		if err := waitAll(ctx, w.operator+" (children created)", made, s.timeout, op.alive); err != nil {
			return err
		}
		created := round(made.seconds(), 2)
		r.CreatedSeconds = &created
	}
	r.Seconds, r.latencies = round(t.seconds(), 2), t.latencies()
	r.P50Ms, r.P99Ms = round(percentile(r.latencies, 50), 1), round(percentile(r.latencies, 99), 1)
	return nil
}

// idleAndMemory reads the requests the operator sent to converge, then
// those of the idle stretch after, and its memory at the end.
func idleAndMemory(ctx context.Context, s settings, w workload, op *process, baseRSS int, r *result) error {
	converged, err := settle(ctx, op.metrics, settleQuiet, settleMax)
	if err != nil {
		return err
	}
	r.RequestsByMethod, r.RequestsByCode = converged.methods(), converged
	live, err := heapLive(ctx, op.metrics)
	if err != nil {
		return err
	}
	r.HeapLiveMiB = round(live/(1<<20), 1)
	if r.heap, err = heapTop(ctx, op.pprof); err != nil {
		return err
	}
	r.HeapProfile = "heap-" + w.operator + ".txt"
	r.Writes, r.Reads = converged.writes(), converged.reads()
	r.WritesPerCR, r.ReadsPerCR = per(r.Writes, w.count), per(r.Reads, w.count)
	if err := sleep(ctx, s.idle); err != nil {
		return err
	}
	idle, err := scrape(ctx, op.metrics)
	if err != nil {
		return err
	}
	r.IdleRequestsByMethod = idle.minus(converged).methods()
	r.IdleSeconds, r.IdleWrites = s.idle.Seconds(), r.IdleRequestsByMethod.writes()
	m, err := memory(op.cmd.Process.Pid)
	if err != nil {
		return err
	}
	r.PeakRSSMiB = round(float64(m.peak)/1024, 1)
	r.RSSFileMiB, r.RSSAnonMiB = round(float64(m.file)/1024, 1), round(float64(m.anon)/1024, 1)
	if r.CPUSeconds, err = cpuSeconds(op.cmd.Process.Pid); err != nil {
		return err
	}
	r.RSSPerCRKiB = round(float64(m.peak-baseRSS)/float64(w.count), 1)
	return op.alive()
}

// settleQuiet is how long an operator's writes must stop for its last
// pass's to be over, and settleMax how long settle waits for that.
const (
	settleQuiet = time.Second
	settleMax   = 10 * time.Second
)

// settle returns the operator's requests once its writes stopped for
// quiet, or most after it was called: a pass that made the last
// CR done may still send what follows (etcd-cluster tells a cluster's
// bootstrap in an Event after the pods that make it done, and Events go
// out behind their own queue). Those writes are the CR's, not the idle
// stretch's; an operator that writes in a loop never stops, and the writes
// after most count as idle.
func settle(ctx context.Context, metrics string, quiet, most time.Duration) (requests, error) {
	last, err := scrape(ctx, metrics)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(most)
	for time.Now().Before(deadline) {
		if err := sleep(ctx, quiet); err != nil {
			return nil, err
		}
		now, err := scrape(ctx, metrics)
		if err != nil {
			return nil, err
		}
		if now.minus(last).writes() == 0 {
			return now, nil
		}
		last = now
	}
	return last, nil
}

// floorTimes are the floor's seconds, those until the cluster settled its
// children (nil for a workload without a settled rule), and the machine's
// busy share while its writes ran.
type floorTimes struct {
	seconds float64
	settled *float64
	busy    float64
}

// floor times the floor's writes for w's CRs on a fresh cluster and, for a
// workload with a settled rule, until the cluster has settled the floor's
// children.
func floor(ctx context.Context, s settings, c *cluster, w workload, p plan) (floorTimes, error) {
	say("%s: the floor (%d writes with the operator's client limits) on a fresh cluster", w.operator, p.writes())
	if err := c.fresh(ctx, nodes(w.count*w.podsPerCR), "crds/"); err != nil {
		return floorTimes{}, err
	}
	dyn, err := c.dynamic()
	if err != nil {
		return floorTimes{}, err
	}
	cfg, err := c.config(s.qps, s.burst)
	if err != nil {
		return floorTimes{}, err
	}
	if _, err := dynamic.NewForConfig(cfg); err != nil {
		return floorTimes{}, err
	}
	limited := &perKind{cfg: cfg, clients: map[schema.GroupVersionResource]*dynamic.DynamicClient{}}
	t := newTracker(w.count)
	var settled *tracker
	if w.settled != nil {
		settled = newTracker(w.count)
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		watchSettled(watchCtx, dyn, w, p, settled)
		settled.begin()
	}
	busy, err := startBusy()
	if err != nil {
		return floorTimes{}, err
	}
	created := make(chan *unstructured.Unstructured, w.count)
	replayed := make(chan error, 1)
	go func() { replayed <- replay(ctx, limited, w.gvr, p, created, t) }()
	err = createAll(ctx, dyn, w.gvr, namespace, objects(w), t, func(cr *unstructured.Unstructured) { created <- cr })
	close(created)
	if err := errors.Join(err, <-replayed); err != nil {
		return floorTimes{}, err
	}
	f := floorTimes{seconds: t.seconds()}
	if f.busy, err = busy.percent(); err != nil {
		return floorTimes{}, err
	}
	if settled == nil {
		return f, nil
	}
	say("%s: the floor's writes took %.1fs; waiting for the cluster to settle its children", w.operator, f.seconds)
	if err := waitAll(ctx, w.operator+": the floor's children settled", settled, s.timeout, func() error { return nil }); err != nil {
		return floorTimes{}, err
	}
	seconds := round(settled.seconds(), 2)
	f.settled = &seconds
	return f, nil
}

// objects are w's CRs.
func objects(w workload) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, name := range names("bench", w.count) {
		out = append(out, w.object(name))
	}
	return out
}

// seedResult is the seed's Python operator on the gordon workload.
type seedResult struct {
	Seconds float64 `json:"seconds"`
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	Pods    int     `json:"pods"`
	Done    string  `json:"done"`
}

// measureSeed runs the seed's Python gordon operator (bench/seed) over the
// gordon workload on a fresh cluster, where only the seed's CRD exists.
func measureSeed(ctx context.Context, s settings, w workload, replicas int) (*seedResult, error) {
	c := &cluster{root: s.root, name: s.cluster}
	defer func() { _ = c.down(context.WithoutCancel(ctx)) }()
	// The seed makes one pod too many for each Gordon.
	pods := w.count * (replicas + 1)
	say("seed gordon: a fresh cluster with %d fake nodes", nodes(pods))
	if err := c.fresh(ctx, nodes(pods), "bench/seed/gordons.operator.prgcont.cz.yaml"); err != nil {
		return nil, err
	}
	dyn, err := c.dynamic()
	if err != nil {
		return nil, err
	}
	py := c.command(ctx, python(), "-u", filepath.Join(s.root, "bench", "seed", "gordon.py"))
	p, err := start(py, logFile(s.root, "seed-gordon"))
	if err != nil {
		return nil, fmt.Errorf("python3 bench/seed/gordon.py (Debian: apt-get install python3-kubernetes): %w", err)
	}
	defer p.stop()
	// The seed says nothing when it is ready; a watch it opens late still
	// lists what exists, so nothing is missed, but its start-up (importing
	// the kubernetes package) should not be counted: give it that time.
	if err := sleep(ctx, 3*time.Second); err != nil {
		return nil, err
	}
	if err := p.alive(); err != nil {
		return nil, fmt.Errorf("%w: python3-kubernetes installed? (its log: %s)", err, logFile(s.root, "seed-gordon"))
	}
	t := newTracker(w.count)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	// The seed writes its pods' names in a top-level state field when it
	// has created them all, and says nothing about them running.
	hasState := func(u *unstructured.Unstructured) bool { _, ok := u.Object["state"]; return ok }
	watchDone(watchCtx, dyn, "default", gordonsGVR, "Gordon", hasState, nil, t)
	var objs []*unstructured.Unstructured
	for _, name := range names("bench", w.count) {
		objs = append(objs, gordon(name, replicas))
	}
	say("seed gordon: creating %d Gordons", w.count)
	if err := createAll(ctx, dyn, gordonsGVR, "default", objs, t, nil); err != nil {
		return nil, err
	}
	if err := waitAll(ctx, "seed gordon", t, s.timeout, p.alive); err != nil {
		return nil, fmt.Errorf("%w (its log: %s)", err, logFile(s.root, "seed-gordon"))
	}
	lat := t.latencies()
	count, err := countPods(ctx, c)
	if err != nil {
		return nil, err
	}
	return &seedResult{
		Seconds: round(t.seconds(), 2), P50Ms: round(percentile(lat, 50), 1), P99Ms: round(percentile(lat, 99), 1), Pods: count,
		Done: "its pods created and their names written in the Gordon (the seed has no Ready)",
	}, nil
}

// python is Debian's python3, where apt installs python3-kubernetes, even
// when another python3 (pyenv's) comes first on PATH.
func python() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}

func countPods(ctx context.Context, c *cluster) (int, error) {
	out, err := c.command(ctx, "kubectl", "get", "pods", "-n", "default", "--no-headers", "-o", "name").Output()
	if err != nil {
		return 0, fmt.Errorf("kubectl get pods: %w", err)
	}
	n := 0
	for _, b := range out {
		if b == '\n' {
			n++
		}
	}
	return n, nil
}

func per(n, crs int) float64 { return round(float64(n)/float64(crs), 2) }

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
