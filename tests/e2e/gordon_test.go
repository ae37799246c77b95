package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	gordonv1 "github.com/operator-workshops/workshop/operators/gordon/api/v1"
)

func gordonReady(obj k8s.Object) bool {
	g := obj.(*gordonv1.Gordon)
	return g.Status.ObservedGeneration == g.Generation && meta.IsStatusConditionTrue(g.Status.Conditions, "Ready")
}

// gordonPods lists the pods of a Gordon that are not terminating, by name.
func gordonPods(ctx context.Context, r *resources.Resources, g *gordonv1.Gordon) ([]string, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, resources.WithLabelSelector("app.kubernetes.io/name=gordon,app.kubernetes.io/instance="+g.Name),
		resources.WithFieldSelector("metadata.namespace="+g.Namespace)); err != nil {
		return nil, err
	}
	var names []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Namespace == g.Namespace {
			names = append(names, p.Name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// waitGordon waits until g is Ready with exactly n running pods, listed in
// its status, and returns their names.
func waitGordon(t *testing.T, r *resources.Resources, g *gordonv1.Gordon, n int) []string {
	t.Helper()
	var names []string
	waitFor(t, fmt.Sprintf("%s to be Ready with %d pods", g.Name, n), func(ctx context.Context) (bool, error) {
		if err := r.Get(ctx, g.Name, g.Namespace, g); err != nil {
			return false, err
		}
		var err error
		if names, err = gordonPods(ctx, r, g); err != nil {
			return false, err
		}
		return gordonReady(g) && len(names) == n && slices.Equal(g.Status.Pods, names) &&
			g.Status.ReadyReplicas == int32(n), nil
	})
	return names
}

func scaleGordon(ctx context.Context, t *testing.T, r *resources.Resources, g *gordonv1.Gordon, n int32) {
	t.Helper()
	patch := k8s.Patch{PatchType: types.MergePatchType, Data: []byte(fmt.Sprintf(`{"spec":{"gordon":{"replicas":%d}}}`, n))}
	if err := r.Patch(ctx, g, patch); err != nil {
		t.Fatal(err)
	}
}

// The workshop's Gordon and its tasks: exactly 3 pods, scaled, healed, deleted.
func TestWorkshopGordon(t *testing.T) {
	g := &gordonv1.Gordon{}
	var three []string
	f := features.New("the workshop's gordoncluster").
		WithSetup("namespace", createNamespace).
		Assess("kubectl apply gives exactly 3 pods, listed in the status", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			applySample(ctx, t, cfg, "operators/gordon/config/samples/gordoncluster.yaml", g)
			three = waitGordon(t, r, g, 3)
			return ctx
		}).
		Assess("scales to 5 and back to 2", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			// Creation timestamps count whole seconds: let the new pods be
			// visibly newer than the first three.
			time.Sleep(1100 * time.Millisecond)
			scaleGordon(ctx, t, r, g, 5)
			waitGordon(t, r, g, 5)
			scaleGordon(ctx, t, r, g, 2)
			two := waitGordon(t, r, g, 2)
			for _, name := range two {
				if !slices.Contains(three, name) {
					t.Errorf("scale down kept %s, a newer pod, over the oldest %v", name, three)
				}
			}
			return ctx
		}).
		Assess("a deleted pod is replaced", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			before := waitGordon(t, r, g, 2)
			victim := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: before[0], Namespace: g.Namespace}}
			if err := r.Delete(ctx, victim); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "a replacement for "+victim.Name, func(ctx context.Context) (bool, error) {
				names, err := gordonPods(ctx, r, g)
				return err == nil && len(names) == 2 && !slices.Contains(names, victim.Name), err
			})
			waitGordon(t, r, g, 2)
			return ctx
		}).
		Assess("deleting the Gordon removes its pods", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			if err := r.Delete(ctx, g); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "no gordon pods", func(ctx context.Context) (bool, error) {
				names, err := gordonPods(ctx, r, g)
				return err == nil && len(names) == 0, err
			})
			return ctx
		}).
		WithTeardown("namespace", deleteNamespace).
		Feature()
	testEnv.Test(t, f)
}

// 100 Gordons of 3 converge to exactly 300 pods, also when the operator is
// killed half way through creating them and started again.
func TestHundredGordonsSurviveAnOperatorKill(t *testing.T) {
	const gordons, each = 100, 3
	f := features.New("100 Gordons x 3 replicas").
		WithSetup("namespace", createNamespace).
		Assess("converge to exactly 300 pods across a kill -9 of the operator", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := client(t, cfg)
			ns := namespaceOf(ctx)
			// Slowed down to 10 requests a second, the operator needs about
			// half a minute for the 300 pods: time to kill it in the middle.
			if err := suite.KillOperator(ctx, "gordon"); err != nil {
				t.Fatal(err)
			}
			if err := suite.StartOperator(ctx, "gordon", "--kube-api-qps=10", "--kube-api-burst=10"); err != nil {
				t.Fatal(err)
			}
			for i := range gordons {
				g := &gordonv1.Gordon{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("g%03d", i), Namespace: ns},
					Spec:       gordonv1.GordonSpec{Gordon: gordonv1.GordonSettings{Replicas: each}},
				}
				if err := r.Create(ctx, g); err != nil {
					t.Fatal(err)
				}
			}
			count := func(ctx context.Context) (int, error) {
				var pods corev1.PodList
				err := r.List(ctx, &pods, resources.WithLabelSelector("app.kubernetes.io/name=gordon"), resources.WithFieldSelector("metadata.namespace="+ns))
				return len(pods.Items), err
			}
			waitFor(t, "half of the pods", func(ctx context.Context) (bool, error) {
				n, err := count(ctx)
				return n >= gordons*each/2, err
			})
			n, _ := count(ctx)
			if err := suite.KillOperator(ctx, "gordon"); err != nil {
				t.Fatal(err)
			}
			t.Logf("killed the gordon operator with %d of %d pods created", n, gordons*each)
			if n >= gordons*each && suite.Provider != "kind" {
				t.Fatalf("the operator had created all %d pods before the kill: the test proves nothing", n)
			}
			if err := suite.StartOperator(ctx, "gordon"); err != nil {
				t.Fatal(err)
			}

			start := time.Now()
			waitAllReady(t, r, ns, &gordonv1.GordonList{}, gordons, gordonReady)
			t.Logf("all %d Gordons Ready %s after the restart", gordons, time.Since(start).Round(time.Millisecond))
			// Exactly 300, and still 300 a moment later: no duplicates.
			for range 3 {
				if n, err := count(ctx); err != nil || n != gordons*each {
					t.Fatalf("%d pods (err %v), want exactly %d", n, err, gordons*each)
				}
				time.Sleep(time.Second)
			}
			return ctx
		}).
		WithTeardown("namespace", deleteNamespace).
		Feature()
	testEnv.Test(t, f)
}
