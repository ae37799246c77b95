package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func TestParseRequests(t *testing.T) {
	text := `# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 41
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 7
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="POST"} 2
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 5
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 1
rest_client_request_duration_seconds_count{host="127.0.0.1:6443",verb="POST"} 99
`
	got, err := parseRequests(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := requests{"GET 200": 42, "POST 201": 7, "POST 409": 2, "PATCH 200": 5}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if m := got.methods(); !reflect.DeepEqual(m, requests{"GET": 42, "POST": 9, "PATCH": 5}) {
		t.Errorf("by method %v", m)
	}
	if got.writes() != 14 || got.reads() != 42 {
		t.Errorf("writes %d reads %d, want 14 and 42", got.writes(), got.reads())
	}
	later := requests{"GET 200": 50, "POST 201": 7, "POST 409": 2, "PATCH 200": 6, "DELETE 200": 1}
	if d := later.minus(got); d.writes() != 2 || d.reads() != 8 {
		t.Errorf("since: writes %d reads %d, want 2 and 8", d.writes(), d.reads())
	}

	for _, bad := range []string{
		`rest_client_requests_total{code="200",method="GET"} many`,
		`rest_client_requests_total{code="200"} 3`,
		`rest_client_requests_total{method="GET"} 3`,
		`rest_client_requests_total{code="200",method="GET"}`,
	} {
		if _, err := parseRequests(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseMemory(t *testing.T) {
	status := "Name:\tdatabase-operator\nVmPeak:\t 1300000 kB\nVmHWM:\t   61440 kB\nVmRSS:\t   51200 kB\n" +
		"RssAnon:\t   22528 kB\nRssFile:\t   28672 kB\nRssShmem:\t       0 kB\nThreads:\t9\n"
	got, err := parseMemory(strings.NewReader(status))
	if want := (memoryUse{rss: 51200, peak: 61440, file: 28672, anon: 22528}); err != nil || got != want {
		t.Fatalf("got %+v %v, want %+v", got, err, want)
	}
	if _, err := parseMemory(strings.NewReader("Name:\tx\nVmHWM:\t 1 kB\nVmRSS:\t 1 kB\n")); err == nil {
		t.Error("no error without RssFile and RssAnon")
	}
}

func TestGauge(t *testing.T) {
	metrics := "# HELP go_gc_heap_live_bytes Heap memory occupied by live objects.\n# TYPE go_gc_heap_live_bytes gauge\n" +
		"go_gc_heap_live_bytes_total 1\ngo_gc_heap_live_bytes 5.4525952e+07\ngo_goroutines 80\n"
	if got, err := gauge(strings.NewReader(metrics), "go_gc_heap_live_bytes"); err != nil || got != 54525952 {
		t.Fatalf("got %v %v, want 54525952", got, err)
	}
	if _, err := gauge(strings.NewReader("go_goroutines 80\n"), "go_gc_heap_live_bytes"); err == nil {
		t.Error("no error without the sample")
	}
}

func TestParseMachineCPU(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	stat := "cpu  100 5 50 800 20 3 2 10 7 0\ncpu0 50 2 25 400 10 1 1 5 3 0\nintr 1\n"
	busy, total, err := parseMachineCPU(stat)
	if err != nil || busy != 160 || total != 980 {
		t.Fatalf("got busy %v of %v, %v; want 160 of 980 (idle and iowait apart, steal in neither, guest within user)", busy, total, err)
	}
	if _, _, err := parseMachineCPU("intr 1\n"); err == nil {
		t.Error("no error without the cpu line")
	}
}

func TestParseCPU(t *testing.T) {
	// A command name with a space and a parenthesis; utime 1234, stime 566.
	stat := "4242 (my op) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1234 566 0 0 20 0 9 0 100 1300000000 15000\n"
	if got, err := parseCPU(stat); err != nil || got != 18 {
		t.Fatalf("got %v %v, want 18 s (1800 ticks)", got, err)
	}
	if _, err := parseCPU("4242 (op) S 1"); err == nil {
		t.Error("no error for a short stat")
	}
}

func TestPercentile(t *testing.T) {
	var l []time.Duration
	for i := 1; i <= 100; i++ {
		l = append(l, time.Duration(i)*time.Millisecond)
	}
	for _, tt := range []struct {
		p    float64
		want float64
	}{{50, 50}, {99, 99}, {100, 100}, {0, 1}} {
		if got := percentile(l, tt.p); got != tt.want {
			t.Errorf("p%v = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := percentile([]time.Duration{7 * time.Millisecond}, 99); got != 7 {
		t.Errorf("p99 of one = %v", got)
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("p50 of none = %v", got)
	}
}

func TestTrackerLatencies(t *testing.T) {
	tr := newTracker(2)
	tr.begin()
	tr.markCreated("a", "uid-a")
	tr.markCreated("b", "uid-b")
	tr.markDone("b")
	tr.markDone("b") // seen twice, counted once
	select {
	case <-tr.all:
		t.Fatal("all done with one of two")
	default:
	}
	time.Sleep(5 * time.Millisecond)
	tr.markDone("a")
	<-tr.all
	l := tr.latencies()
	if len(l) != 2 || l[0] > l[1] || l[1] < 5*time.Millisecond {
		t.Errorf("latencies %v: want two, sorted, the last at least 5ms", l)
	}
	if tr.seconds() < 0.005 {
		t.Errorf("seconds %v: want at least 0.005", tr.seconds())
	}
}

func TestChildCounter(t *testing.T) {
	c := newChildCounter(map[schema.GroupVersionResource]int{podsGVR: 2, servicesGVR: 1})
	steps := []struct {
		gvr  schema.GroupVersionResource
		uid  string
		done bool
	}{
		{podsGVR, "p1", false},
		{podsGVR, "p1", false}, // an update of the same pod
		{servicesGVR, "s1", false},
		{podsGVR, "p2", true},
	}
	for i, s := range steps {
		if got := c.add("x", s.gvr, types.UID(s.uid)); got != s.done {
			t.Fatalf("step %d: done = %v, want %v", i, got, s.done)
		}
	}
	if c.add("y", podsGVR, "p3") {
		t.Error("another owner done with one pod")
	}
}

func TestBlank(t *testing.T) {
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{
			"name": "db", "namespace": "bench", "uid": "u", "resourceVersion": "9", "creationTimestamp": "2026-01-01T00:00:00Z",
			"managedFields": []any{map[string]any{"manager": "x"}},
			"labels":        map[string]any{"app": "db"},
			"ownerReferences": []any{map[string]any{
				"apiVersion": "zalando.org/v1", "kind": "Database", "name": "db", "uid": "old", "controller": true,
			}},
		},
		"spec": map[string]any{
			"type": "NodePort", "clusterIP": "10.96.0.9", "clusterIPs": []any{"10.96.0.9"},
			"ports": []any{map[string]any{"port": int64(27017), "nodePort": int64(30001)}},
		},
		"status": map[string]any{"loadBalancer": map[string]any{}},
	}}
	got := blank(svc)
	want := map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{
			"name": "db", "namespace": "bench",
			"labels": map[string]any{"app": "db"},
			"ownerReferences": []any{map[string]any{
				"apiVersion": "zalando.org/v1", "kind": "Database", "name": "db", "uid": "old", "controller": true,
			}},
		},
		"spec": map[string]any{"type": "NodePort", "ports": []any{map[string]any{"port": int64(27017)}}},
	}
	if !reflect.DeepEqual(got.Object, want) {
		t.Errorf("blank service:\n got %v\nwant %v", got.Object, want)
	}
	if _, ok := svc.Object["status"]; !ok {
		t.Error("blank changed its argument")
	}

	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "restore", "labels": map[string]any{
			"batch.kubernetes.io/controller-uid": "u", "controller-uid": "u", "job-name": "restore", "app": "mysql",
		}},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": "u"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{
				"batch.kubernetes.io/controller-uid": "u", "app": "mysql",
			}}},
		},
	}}
	j := blank(job)
	if _, found, _ := unstructured.NestedFieldNoCopy(j.Object, "spec", "selector"); found {
		t.Error("the Job keeps its generated selector")
	}
	tl, _, _ := unstructured.NestedStringMap(j.Object, "spec", "template", "metadata", "labels")
	if !reflect.DeepEqual(tl, map[string]string{"app": "mysql"}) {
		t.Errorf("template labels %v", tl)
	}
	if l := j.GetLabels(); !reflect.DeepEqual(l, map[string]string{"job-name": "restore", "app": "mysql"}) {
		t.Errorf("labels %v", l)
	}
}

func TestReplaceBetween(t *testing.T) {
	doc := "# Title\n\n" + beginMarker + "old table\n" + endMarker + "\n\nafter\n"
	got, err := replaceBetween([]byte(doc), beginMarker, endMarker, "new table\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Title\n\n" + beginMarker + "new table\n" + endMarker + "\n\nafter\n"
	if string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := replaceBetween([]byte("no markers"), beginMarker, endMarker, "x"); err == nil {
		t.Error("no error without markers")
	}
}

func TestNodes(t *testing.T) {
	// A fake node takes 110 pods: the cluster must hold every pod.
	for _, pods := range []int{0, 3, 110, 1000, 1200} {
		if n := nodes(pods); n*110 < pods+110 {
			t.Errorf("%d pods on %d nodes", pods, n)
		}
	}
}

// settle waits out the writes that follow the last CR's done, and no
// longer than its limit for an operator that never stops writing.
func TestSettle(t *testing.T) {
	var scrapes, stopsAfter atomic.Int32
	stopsAfter.Store(3)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := min(scrapes.Add(1), stopsAfter.Load())
		_, _ = fmt.Fprintf(w, "rest_client_requests_total{code=\"201\",method=\"POST\"} %d\nrest_client_requests_total{code=\"200\",method=\"GET\"} 7\n", n)
	}))
	defer srv.Close()
	got, err := settle(t.Context(), srv.URL, 10*time.Millisecond, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got.writes() != int(stopsAfter.Load()) {
		t.Errorf("settled at %d writes, want %d: the writes after the first scrape are the last pass's", got.writes(), stopsAfter.Load())
	}

	scrapes.Store(0)
	stopsAfter.Store(1 << 30) // a loop
	start := time.Now()
	if _, err := settle(t.Context(), srv.URL, 10*time.Millisecond, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Errorf("settle waited %s for an operator that never stops writing; want about its 200ms limit", waited)
	}
}

func TestTableShowsTheSettledFloor(t *testing.T) {
	settled := 381.6
	rep := report{Operators: map[string]*result{
		"mysql-backup": {CRs: 1000, Seconds: 471.9, FloorSeconds: 123.0, FloorSettledSeconds: &settled},
		"database":     {CRs: 1000, Seconds: 52.3, FloorSeconds: 51.5},
	}, Machine: machine{Date: "2026-11-27T00:00:00Z"}}
	table := rep.table()
	for _, want := range []string{"| 123.0 (settled 381.6) |", "| 51.5 |"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table has no %q:\n%s", want, table)
		}
	}
	if s := rep.Operators["mysql-backup"].summary(); !strings.Contains(s, "settled by the cluster in 381.6s") {
		t.Errorf("the summary does not tell the settled floor: %s", s)
	}
}

func TestTableSplitsMemoryAndTellsTheMachinesLoad(t *testing.T) {
	rep := report{Operators: map[string]*result{
		"etcd-cluster": {CRs: 1000, PeakRSSMiB: 103.9, RSSFileMiB: 29.6, RSSAnonMiB: 70.2, HeapLiveMiB: 41.3, BusyPercent: 99, FloorBusyPercent: 87},
	}, Machine: machine{Date: "2026-11-28T00:00:00Z"}}
	if want := "| etcd-cluster | 103.9 | 29.6 | 70.2 | 41.3 | 99 % | 87 % |"; !strings.Contains(rep.table(), want) {
		t.Errorf("the table has no %q:\n%s", want, rep.table())
	}
	if s := rep.Operators["etcd-cluster"].summary(); !strings.Contains(s, "29.6 file-mapped, 70.2 anonymous; live heap 41.3") || !strings.Contains(s, "machine busy 87 %") {
		t.Errorf("the summary does not split the memory or tell the machine's load: %s", s)
	}
}

// A result with every figure a run produces passes; each figure missing or
// zero where work costs something is named.
func TestAbsurd(t *testing.T) {
	real := func() *result {
		return &result{CRs: 4, Seconds: 3.2, Writes: 20, Reads: 9, WritesPerCR: 5, P50Ms: 40, P99Ms: 300, PeakRSSMiB: 41,
			CPUSeconds: 1.5, FloorSeconds: 2.1, FloorWritesPerCR: 3, RatioToFloor: 1.5, Seed: &seedResult{Seconds: 9, Pods: 12}}
	}
	if bad := real().absurd(); bad != "" {
		t.Errorf("a real result is called absurd: %s", bad)
	}
	for name, spoil := range map[string]func(*result){
		"writes per CR at least 1":       func(r *result) { r.Writes, r.WritesPerCR = 0, 0 },
		"p50 <= p99, both above 0":       func(r *result) { r.P50Ms = 400 },
		"floor writes per CR at least 1": func(r *result) { r.FloorWritesPerCR = 0 },
		"peak RSS":                       func(r *result) { r.PeakRSSMiB = 0 },
		"seed seconds":                   func(r *result) { r.Seed.Seconds = 0 },
		"ratio to the floor":             func(r *result) { r.RatioToFloor = 0 },
	} {
		r := real()
		spoil(r)
		if bad := r.absurd(); !strings.Contains(bad, name) {
			t.Errorf("spoiled %q: absurd says %q", name, bad)
		}
	}
}

// The floor replays what the operator left only when that is what a CR
// costs by the hand count: one child missing or too many, a CR without a
// status or children of a CR that is gone each refuse it.
func TestPlanDiffersFromTheHandCount(t *testing.T) {
	want := map[schema.GroupVersionResource]int{podsGVR: 1, servicesGVR: 1}
	obj := &unstructured.Unstructured{}
	good := func() plan {
		return plan{
			children: map[string][]child{"a": {{gvr: podsGVR, obj: obj}, {gvr: servicesGVR, obj: obj}}},
			status:   map[string]map[string]any{"a": {"ready": true}},
		}
	}
	if d := good().differs(want); d != "" {
		t.Fatalf("the hand count itself differs: %s", d)
	}
	for name, change := range map[string]func(p plan){
		"a child missing": func(p plan) { p.children["a"] = p.children["a"][:1] },
		"a child more":    func(p plan) { p.children["a"] = append(p.children["a"], child{gvr: secretsGVR, obj: obj}) },
		"no status":       func(p plan) { p.status["a"] = nil },
		"a CR gone":       func(p plan) { p.children["b"] = p.children["a"] },
	} {
		p := good()
		change(p)
		if d := p.differs(want); d == "" {
			t.Errorf("%s: no difference found", name)
		} else {
			t.Logf("%s: %s", name, d)
		}
	}
}
