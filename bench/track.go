package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// A tracker records when each CR was created and when it was first seen
// done, on this machine's clock.
type tracker struct {
	mu      sync.Mutex
	start   time.Time
	created map[string]time.Time
	done    map[string]time.Time
	uids    map[string]types.UID
	total   int
	all     chan struct{} // closed when every CR is done
}

func newTracker(total int) *tracker {
	return &tracker{
		created: map[string]time.Time{}, done: map[string]time.Time{}, uids: map[string]types.UID{},
		total: total, all: make(chan struct{}),
	}
}

// begin starts the clock: the first create is about to be sent.
func (t *tracker) begin() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start = time.Now()
}

func (t *tracker) markCreated(name string, uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.created[name], t.uids[name] = time.Now(), uid
}

func (t *tracker) markDone(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.done[name]; seen {
		return
	}
	t.done[name] = time.Now()
	if len(t.done) == t.total {
		close(t.all)
	}
}

func (t *tracker) doneCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.done)
}

func (t *tracker) elapsed() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return time.Since(t.start)
}

// seconds is the time from the first create to the last CR done.
func (t *tracker) seconds() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var last time.Time
	for _, d := range t.done {
		if d.After(last) {
			last = d
		}
	}
	return last.Sub(t.start).Seconds()
}

// latencies are each CR's time from created to done, sorted. A CR seen done
// before its create call returned counts zero.
func (t *tracker) latencies() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]time.Duration, 0, len(t.done))
	for name, d := range t.done {
		out = append(out, max(d.Sub(t.created[name]), 0))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// percentile is the p-th percentile (0-100) of sorted latencies, nearest
// rank, in milliseconds.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.999999) - 1
	rank = min(max(rank, 0), len(sorted)-1)
	return float64(sorted[rank]) / float64(time.Millisecond)
}

// createAll creates objs at once in ns, from workers goroutines, and tells
// t; it returns the first error.
func createAll(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string,
	objs []*unstructured.Unstructured, t *tracker, then func(*unstructured.Unstructured)) error {
	const workers = 16
	next := make(chan *unstructured.Unstructured)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	t.begin()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for obj := range next {
				made, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
				if err != nil {
					errs <- fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
					return
				}
				t.markCreated(made.GetName(), made.GetUID())
				if then != nil {
					then(made)
				}
			}
		}()
	}
	var err error
feed:
	for _, obj := range objs {
		select {
		case next <- obj:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	return errors.Join(err, <-errs)
}

// watchDone starts informers that tell t when a CR is done: when isDone
// says so of the CR, or, with children set, when it controls that many
// objects of each kind. They stop with ctx.
func watchDone(ctx context.Context, dyn dynamic.Interface, ns string, gvr schema.GroupVersionResource, kind string,
	isDone func(*unstructured.Unstructured) bool, children map[schema.GroupVersionResource]int, t *tracker) {
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	if children == nil {
		handle(f, gvr, func(u *unstructured.Unstructured) {
			if isDone(u) {
				t.markDone(u.GetName())
			}
		})
	} else {
		c := newChildCounter(children)
		for child := range children {
			handle(f, child, func(u *unstructured.Unstructured) {
				if owner := controllerOf(u, kind); owner != "" && c.add(owner, child, u.GetUID()) {
					t.markDone(owner)
				}
			})
		}
	}
	f.Start(ctx.Done())
}

// handle calls fn with every object of gvr the informer sees added or
// updated.
func handle(f dynamicinformer.DynamicSharedInformerFactory, gvr schema.GroupVersionResource, fn func(*unstructured.Unstructured)) {
	on := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			fn(u)
		}
	}
	_, _ = f.ForResource(gvr).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    on,
		UpdateFunc: func(_, obj any) { on(obj) },
	})
}

// controllerOf is the name of the object's controller when it is of kind.
func controllerOf(u *unstructured.Unstructured, kind string) string {
	if ref := metav1.GetControllerOf(u); ref != nil && ref.Kind == kind {
		return ref.Name
	}
	return ""
}

// ready reports whether a CR's Ready condition is True.
func ready(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// A childCounter counts each owner's distinct children of each kind.
type childCounter struct {
	mu   sync.Mutex
	want map[schema.GroupVersionResource]int
	seen map[string]map[schema.GroupVersionResource]map[types.UID]bool
}

func newChildCounter(want map[schema.GroupVersionResource]int) *childCounter {
	return &childCounter{want: want, seen: map[string]map[schema.GroupVersionResource]map[types.UID]bool{}}
}

// add counts a child and reports whether its owner now has all it wants.
func (c *childCounter) add(owner string, gvr schema.GroupVersionResource, uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[owner] == nil {
		c.seen[owner] = map[schema.GroupVersionResource]map[types.UID]bool{}
	}
	if c.seen[owner][gvr] == nil {
		c.seen[owner][gvr] = map[types.UID]bool{}
	}
	c.seen[owner][gvr][uid] = true
	for kind, n := range c.want {
		if len(c.seen[owner][kind]) < n {
			return false
		}
	}
	return true
}

// waitAll waits until t has every CR done, printing progress every ten
// seconds; it fails after timeout or when alive does.
func waitAll(ctx context.Context, what string, t *tracker, timeout time.Duration, alive func() error) error {
	deadline := time.After(timeout)
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-t.all:
			return nil
		case <-tick.C:
			if err := alive(); err != nil {
				return err
			}
			say("%s: %d/%d done after %s", what, t.doneCount(), t.total, t.elapsed().Round(time.Second))
		case <-deadline:
			return fmt.Errorf("%s: %d/%d done after %s", what, t.doneCount(), t.total, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
