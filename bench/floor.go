package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
)

// The floor is what a CR strictly costs: the writes of the objects its
// operator left behind, created once each, and one status write. The harness
// learns them from the operator's own run (capture), so the floor needs no
// second copy of what each operator builds, then replays them with a client
// limited as the operator's is, on a fresh cluster.

// childKinds are the kinds an operator may create for its CRs.
var childKinds = []schema.GroupVersionResource{
	{Version: "v1", Resource: "secrets"},
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "persistentvolumeclaims"},
	servicesGVR,
	pdbsGVR,
	deploymentsGVR,
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	jobsGVR,
	podsGVR,
}

// A child is one object to create again.
type child struct {
	gvr schema.GroupVersionResource
	obj *unstructured.Unstructured
}

// A plan is, for each CR by name, its children and its status.
type plan struct {
	children map[string][]child
	status   map[string]map[string]any
}

// differs says how p differs from want, the children each of its CRs must
// have by kind, and from a status write per CR; "" when it does not.
func (p plan) differs(want map[schema.GroupVersionResource]int) string {
	var bad []string
	for name, st := range p.status {
		got := map[schema.GroupVersionResource]int{}
		for _, c := range p.children[name] {
			got[c.gvr]++
		}
		if !maps.Equal(got, want) {
			bad = append(bad, fmt.Sprintf("%s has %s", name, kinds(got)))
		}
		if st == nil {
			bad = append(bad, name+" has no status")
		}
	}
	for name := range p.children {
		if _, ok := p.status[name]; !ok {
			bad = append(bad, "children of "+name+", which is gone")
		}
	}
	if len(bad) == 0 {
		return ""
	}
	slices.Sort(bad)
	if len(bad) > 3 {
		bad = append(bad[:3], fmt.Sprintf("and %d more", len(bad)-3))
	}
	return fmt.Sprintf("want %s per CR and a status: %s", kinds(want), strings.Join(bad, "; "))
}

// kinds prints a count by kind: "1 pods, 1 services", in kind order.
func kinds(n map[schema.GroupVersionResource]int) string {
	var out []string
	for _, k := range childKinds {
		if n[k] > 0 {
			out = append(out, fmt.Sprintf("%d %s", n[k], k.Resource))
		}
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}

func (p plan) writes() int {
	n := len(p.status)
	for _, c := range p.children {
		n += len(c)
	}
	return n
}

// capture reads what the operator made of each CR of kind in ns: the
// objects the CR directly owns (a Deployment's pods are the Deployment
// controller's writes, not the operator's) and the CR's status.
func capture(ctx context.Context, dyn dynamic.Interface, ns string, gvr schema.GroupVersionResource, kind string) (plan, error) {
	p := plan{children: map[string][]child{}, status: map[string]map[string]any{}}
	crs, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return p, err
	}
	for _, cr := range crs.Items {
		st, _, _ := unstructured.NestedMap(cr.Object, "status")
		p.status[cr.GetName()] = st
	}
	for _, k := range childKinds {
		list, err := dyn.Resource(k).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return p, fmt.Errorf("listing %s: %w", k.Resource, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if owner := madeFor(obj, kind); owner != "" {
				p.children[owner] = append(p.children[owner], child{gvr: k, obj: blank(obj)})
			}
		}
	}
	return p, nil
}

// madeFor is the name of the CR of kind the operator made u for: an owner
// of that kind, controller or not, or, for what deliberately has no owner
// (mysql-backup's volumes outlive their MySQL), the instance label every
// operator here puts on its children. What another controller made (a
// Deployment's pods, a Job's) is that controller's write.
func madeFor(u *unstructured.Unstructured, kind string) string {
	for _, ref := range u.GetOwnerReferences() {
		if ref.Kind == kind {
			return ref.Name
		}
	}
	if metav1.GetControllerOf(u) != nil || u.GetLabels()[partOf] != partOfValue {
		return ""
	}
	return u.GetLabels()[instance]
}

// The labels of operators/common/labels that mark every child.
const (
	partOf      = "app.kubernetes.io/part-of"
	partOfValue = "operator-workshops"
	instance    = "app.kubernetes.io/instance"
)

// blank returns obj as a client would first send it: without what the API
// server and the controllers filled in (identity, status, the addresses,
// node and volume they assigned, the selectors they generated).
func blank(obj *unstructured.Unstructured) *unstructured.Unstructured {
	u := obj.DeepCopy()
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	u.SetFinalizers(without(u.GetFinalizers(), "kubernetes.io/"))
	u.SetAnnotations(withoutKeys(u.GetAnnotations(), "pv.kubernetes.io/", "volume.beta.kubernetes.io/",
		"volume.kubernetes.io/", "deployment.kubernetes.io/"))
	switch u.GetKind() {
	case "Service":
		unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
		unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
		ports, _, _ := unstructured.NestedSlice(u.Object, "spec", "ports")
		for _, p := range ports {
			if m, ok := p.(map[string]any); ok {
				delete(m, "nodePort")
			}
		}
		_ = unstructured.SetNestedSlice(u.Object, ports, "spec", "ports")
	case "Pod":
		unstructured.RemoveNestedField(u.Object, "spec", "nodeName")
	case "PersistentVolumeClaim":
		unstructured.RemoveNestedField(u.Object, "spec", "volumeName")
	case "Job":
		unstructured.RemoveNestedField(u.Object, "spec", "selector")
		for _, path := range [][]string{{"metadata", "labels"}, {"spec", "template", "metadata", "labels"}} {
			labels, _, _ := unstructured.NestedStringMap(u.Object, path...)
			labels = withoutKeys(labels, "controller-uid", "batch.kubernetes.io/controller-uid")
			_ = unstructured.SetNestedStringMap(u.Object, labels, path...)
		}
	}
	return u
}

func without(list []string, prefix string) []string {
	var out []string
	for _, s := range list {
		if !strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// withoutKeys is m without the keys that start with one of prefixes; nil
// when none is left, so that no empty map is sent.
func withoutKeys(m map[string]string, prefixes ...string) map[string]string {
	var out map[string]string
keys:
	for k, v := range m {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				continue keys
			}
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// perKind gives a client of its own to each kind, as controller-runtime's
// client does (a REST client per GroupVersionKind): each has its own rate
// limiter, so an operator's --kube-api-qps holds per kind, and so does the
// floor's.
type perKind struct {
	cfg     *rest.Config
	mu      sync.Mutex
	clients map[schema.GroupVersionResource]*dynamic.DynamicClient
}

func (g *perKind) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.clients[gvr]
	if !ok {
		// NewForConfig fails only on a config that failed before.
		c = dynamic.NewForConfigOrDie(g.cfg)
		g.clients[gvr] = c
	}
	return c.Resource(gvr)
}

// replay makes each CR's writes with dyn, the floor's rate-limited clients,
// as soon as the harness has created the CR; it returns when every CR's
// writes are done, or at the first failure.
func replay(ctx context.Context, dyn *perKind, gvr schema.GroupVersionResource, p plan,
	created <-chan *unstructured.Unstructured, t *tracker) error {
	const workers = 32
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cr := range created {
				if err := writesOf(ctx, dyn, gvr, p, cr); err != nil {
					once.Do(func() { first = err })
					continue
				}
				t.markDone(cr.GetName())
			}
		}()
	}
	wg.Wait()
	return first
}

// writesOf creates cr's children, owned by the new cr, and writes its status.
func writesOf(ctx context.Context, dyn *perKind, gvr schema.GroupVersionResource, p plan, cr *unstructured.Unstructured) error {
	for _, c := range p.children[cr.GetName()] {
		obj := c.obj.DeepCopy()
		refs := obj.GetOwnerReferences()
		for i := range refs {
			if refs[i].Kind == cr.GetKind() {
				refs[i].UID = cr.GetUID()
			}
		}
		obj.SetOwnerReferences(refs)
		if _, err := dyn.Resource(c.gvr).Namespace(cr.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("floor: creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	body, err := json.Marshal(map[string]any{"status": p.status[cr.GetName()]})
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(gvr).Namespace(cr.GetNamespace()).Patch(ctx, cr.GetName(), types.MergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("floor: writing the status of %s: %w", cr.GetName(), err)
	}
	return nil
}

// watchSettled starts informers that tell t when the cluster has settled
// each of the floor's CRs' children of w's settled kinds (as p made them):
// a CR counts once as many of each kind are as every CR has (they all have
// the same children).
func watchSettled(ctx context.Context, dyn dynamic.Interface, w workload, p plan, t *tracker) {
	var want map[schema.GroupVersionResource]int
	for _, children := range p.children {
		n := map[schema.GroupVersionResource]int{}
		for _, c := range children {
			if w.settled[c.gvr] != nil {
				n[c.gvr]++
			}
		}
		if want == nil {
			want = n
		}
		for gvr := range w.settled {
			want[gvr] = min(want[gvr], n[gvr])
		}
	}
	counted := newChildCounter(want)
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, namespace, nil)
	for gvr, isSettled := range w.settled {
		handle(f, gvr, func(u *unstructured.Unstructured) {
			if owner := madeFor(u, w.kind); owner != "" && isSettled(u) && counted.add(owner, gvr, u.GetUID()) {
				t.markDone(owner)
			}
		})
	}
	f.Start(ctx.Done())
}
