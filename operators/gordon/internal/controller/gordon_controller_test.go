package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/labels"
	"github.com/operator-workshops/workshop/operators/common/testenv"
	gordonv1 "github.com/operator-workshops/workshop/operators/gordon/api/v1"
)

func createGordon(t *testing.T, ns, name string, replicas int32) *gordonv1.Gordon {
	t.Helper()
	g := &gordonv1.Gordon{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       gordonv1.GordonSpec{Gordon: gordonv1.GordonSettings{Replicas: replicas}},
	}
	if err := suite.Client.Create(context.Background(), g); err != nil {
		t.Fatalf("creating Gordon %s: %v", name, err)
	}
	return g
}

// podsOf lists g's pods that are not terminating, oldest first.
func podsOf(ctx context.Context, g *gordonv1.Gordon) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := suite.Client.List(ctx, &list, client.InNamespace(g.Namespace), client.MatchingLabels(labels.Selector(appName, g.Name))); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp) })
	return out, nil
}

// waitPods waits until g has exactly n pods and returns them.
func waitPods(t *testing.T, g *gordonv1.Gordon, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	testenv.Eventually(t, fmt.Sprintf("%d pods of %s", n, g.Name), func(ctx context.Context) (err error) {
		if pods, err = podsOf(ctx, g); err != nil {
			return err
		}
		if len(pods) != n {
			return fmt.Errorf("%d pods", len(pods))
		}
		return nil
	})
	return pods
}

// stays checks that g keeps exactly n pods for a while: a controller that
// overshoots does it right after reaching the count.
func stays(t *testing.T, g *gordonv1.Gordon, n int) {
	t.Helper()
	testenv.Consistently(t, 2*time.Second, fmt.Sprintf("%s with exactly %d pods", g.Name, n), func(ctx context.Context) error {
		pods, err := podsOf(ctx, g)
		if err != nil {
			return err
		}
		if len(pods) != n {
			return fmt.Errorf("%d pods", len(pods))
		}
		return nil
	})
}

// markReady does what a kubelet would: envtest runs no node.
func markReady(t *testing.T, pods []corev1.Pod) {
	t.Helper()
	for i := range pods {
		pods[i].Status.Phase = corev1.PodRunning
		pods[i].Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if err := suite.Client.Status().Update(context.Background(), &pods[i]); err != nil {
			t.Fatal(err)
		}
	}
}

func names(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

func setReplicas(t *testing.T, g *gordonv1.Gordon, n int32) {
	t.Helper()
	patch := client.MergeFrom(g.DeepCopy())
	g.Spec.Gordon.Replicas = n
	if err := suite.Client.Patch(context.Background(), g, patch); err != nil {
		t.Fatal(err)
	}
}

func TestWorkshopGordonKeepsExactlyThreePods(t *testing.T) {
	ns := suite.Namespace(t, nil)
	g := createGordon(t, ns, "gordoncluster", 3)

	pods := waitPods(t, g, 3)
	stays(t, g, 3) // the workshop's loop made a fourth
	for _, p := range pods {
		if !strings.HasPrefix(p.Name, "gordon-") || p.GenerateName != "gordon-" {
			t.Errorf("pod %s was not named from generateName gordon-", p.Name)
		}
		if !metav1.IsControlledBy(&p, g) {
			t.Errorf("pod %s is not controlled by the Gordon", p.Name)
		}
		if p.Spec.Containers[0].Name != "gordon" || p.Spec.Containers[0].Image != gordonv1.DefaultImage {
			t.Errorf("pod %s runs %+v, want the workshop's gordon container", p.Name, p.Spec.Containers[0])
		}
	}

	markReady(t, pods)
	testenv.Eventually(t, "the status to list the 3 ready pods", func(ctx context.Context) error {
		got := &gordonv1.Gordon{}
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(g), got); err != nil {
			return err
		}
		s := got.Status
		if !slices.Equal(s.Pods, names(pods)) || s.Replicas != 3 || s.ReadyReplicas != 3 || !conditions.IsTrue(s.Conditions, conditions.Ready) {
			return fmt.Errorf("status %+v, want pods %v, 3 ready", s, names(pods))
		}
		if s.Selector != "app.kubernetes.io/instance=gordoncluster,app.kubernetes.io/name=gordon" {
			return fmt.Errorf("selector %q", s.Selector)
		}
		return nil
	})
}

func TestScaleUpAndDown(t *testing.T) {
	ns := suite.Namespace(t, nil)
	g := createGordon(t, ns, "scaled", 3)
	first := waitPods(t, g, 3)
	markReady(t, first)

	// Creation timestamps have a resolution of one second: let the next
	// pods be visibly newer.
	time.Sleep(1100 * time.Millisecond)
	setReplicas(t, g, 5)
	five := waitPods(t, g, 5)
	stays(t, g, 5)
	markReady(t, five[3:])

	// One of the oldest pods stops being ready: scale down removes it
	// first, then the newest.
	notReady := five[0]
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	if err := suite.Client.Status().Update(context.Background(), &notReady); err != nil {
		t.Fatal(err)
	}
	setReplicas(t, g, 2)
	two := waitPods(t, g, 2)
	stays(t, g, 2)
	if want := names(five[1:3]); !slices.Equal(names(two), want) {
		t.Errorf("after scaling 5 -> 2 the pods are %v, want the two oldest ready ones %v", names(two), want)
	}

	setReplicas(t, g, 0)
	waitPods(t, g, 0)
}

func TestScaleSubresource(t *testing.T) {
	ns := suite.Namespace(t, nil)
	g := createGordon(t, ns, "kubectl-scale", 1)
	waitPods(t, g, 1)
	// What `kubectl scale gordon/kubectl-scale --replicas=4` sends.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":4}}`))
	// The response, a Scale, is decoded into the object passed: pass a copy.
	if err := suite.Client.SubResource("scale").Patch(context.Background(), g.DeepCopy(), patch); err != nil {
		t.Fatal(err)
	}
	waitPods(t, g, 4)
}

func TestEndedAndDeletedPodsAreReplaced(t *testing.T) {
	ns := suite.Namespace(t, nil)
	g := createGordon(t, ns, "healing", 2)
	pods := waitPods(t, g, 2)
	ctx := context.Background()

	// The workshop's checker task: a terminated pod is replaced.
	failed := pods[0]
	failed.Status.Phase = corev1.PodFailed
	if err := suite.Client.Status().Update(ctx, &failed); err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.Delete(ctx, &pods[1]); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "two new pods", func(ctx context.Context) error {
		now, err := podsOf(ctx, g)
		if err != nil {
			return err
		}
		if len(now) != 2 || slices.Contains(names(now), pods[0].Name) || slices.Contains(names(now), pods[1].Name) {
			return fmt.Errorf("pods are %v, replaced were %v", names(now), names(pods))
		}
		return nil
	})
	stays(t, g, 2)
}

func TestBadInputIsRefusedAtAdmission(t *testing.T) {
	ns := suite.Namespace(t, nil)
	tests := []struct {
		name     string
		settings map[string]any
		message  string
	}{
		{"negative", map[string]any{"replicas": -1}, "spec.gordon.replicas: Invalid value: -1: spec.gordon.replicas in body should be greater than or equal to 0"},
		{"not an integer", map[string]any{"replicas": 2.5}, "spec.gordon.replicas in body must be of type int32"},
		{"a string", map[string]any{"replicas": "three"}, "spec.gordon.replicas in body must be of type integer"},
		{"missing", map[string]any{}, "spec.gordon.replicas: Required value"},
		{"over the limit", map[string]any{"replicas": 1001}, "spec.gordon.replicas in body should be less than or equal to 1000"},
		{"an empty image", map[string]any{"replicas": 1, "image": ""}, "spec.gordon.image in body should be at least 1 chars long"},
		{"an image name too long", map[string]any{"replicas": 1, "image": strings.Repeat("i", 513)}, "spec.gordon.image: Too long"},
		{"replicas beside gordon", map[string]any{"replicas": 1, "size": 3}, `unknown field "spec.gordon.size"`},
	}
	gordon := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gordonv1.GroupVersion.String(),
			"kind":       "Gordon",
			"metadata":   map[string]any{"name": name, "namespace": ns},
			"spec":       spec,
		}}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// kubectl apply asks for strict field validation, as here.
			err := suite.Client.Create(context.Background(), gordon("bad", map[string]any{"gordon": tt.settings}), client.FieldValidation("Strict"))
			if err == nil || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("want an error containing %q, got %v", tt.message, err)
			}
		})
	}
	others := []struct {
		name, object string
		spec         map[string]any
		message      string
	}{
		{"no gordon settings", "bad", map[string]any{}, "spec.gordon: Required value"},
		{"the workshop's state at the top of spec", "bad", map[string]any{"gordon": map[string]any{"replicas": 1}, "state": "up"}, `unknown field "spec.state"`},
		{"a name too long for the pods' label", strings.Repeat("g", 64), map[string]any{"gordon": map[string]any{"replicas": 1}}, "at most 63 characters"},
	}
	for _, tt := range others {
		t.Run(tt.name, func(t *testing.T) {
			err := suite.Client.Create(context.Background(), gordon(tt.object, tt.spec), client.FieldValidation("Strict"))
			if err == nil || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("want an error containing %q, got %v", tt.message, err)
			}
		})
	}
}

// Pods of another Gordon, or with the labels but no owner, are not counted.
func TestOnlyOwnPodsCount(t *testing.T) {
	ns := suite.Namespace(t, nil)
	stranger := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stranger", Namespace: ns, Labels: labels.Selector(appName, "mine")},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if err := suite.Client.Create(context.Background(), stranger); err != nil {
		t.Fatal(err)
	}
	g := createGordon(t, ns, "mine", 2)
	other := createGordon(t, ns, "other", 1)
	waitPods(t, other, 1)
	testenv.Eventually(t, "2 owned pods besides the stranger", func(ctx context.Context) error {
		pods, err := podsOf(ctx, g)
		if err != nil {
			return err
		}
		if len(pods) != 3 { // two owned plus the stranger, which carries the labels
			return fmt.Errorf("%d labelled pods", len(pods))
		}
		return nil
	})
	if err := suite.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "stranger"}, stranger); err != nil {
		t.Errorf("the stranger pod was touched: %v", err)
	}
}

// A pod that cannot run makes the Gordon Degraded with the kubelet's reason,
// and one Warning event, until it runs.
func TestStuckPodsMakeTheGordonDegraded(t *testing.T) {
	ns := suite.Namespace(t, nil)
	ctx := context.Background()
	g := createGordon(t, ns, "stuck", 2)
	pods := waitPods(t, g, 2)
	markReady(t, pods[:1])
	crashing := &pods[1]
	crashing.Status.Phase = corev1.PodRunning
	crashing.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: containerName, RestartCount: 5,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 2m40s"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}},
	}}
	if err := suite.Client.Status().Update(ctx, crashing); err != nil {
		t.Fatal(err)
	}
	got := &gordonv1.Gordon{}
	status := func(typ string) metav1.Condition {
		for _, c := range got.Status.Conditions {
			if c.Type == typ {
				return c
			}
		}
		return metav1.Condition{}
	}
	testenv.Eventually(t, "Degraded CrashLoopBackOff", func(ctx context.Context) error {
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(g), got); err != nil {
			return err
		}
		if d := status(conditions.Degraded); d.Status != metav1.ConditionTrue || d.Reason != "CrashLoopBackOff" {
			return fmt.Errorf("Degraded %+v", d)
		}
		return nil
	})
	if d := status(conditions.Degraded); !strings.Contains(d.Message, "1 of 2 pods cannot run") || !strings.Contains(d.Message, crashing.Name) || !strings.Contains(d.Message, "last exit code 2") {
		t.Errorf("Degraded says %q", d.Message)
	}
	if r, p := status(conditions.Ready), status(conditions.Progressing); r.Status != metav1.ConditionFalse || p.Status != metav1.ConditionFalse {
		t.Errorf("Ready %s, Progressing %s: want both False while a person must act", r.Status, p.Status)
	}
	testenv.Eventually(t, "one CrashLoopBackOff warning", func(ctx context.Context) error {
		if n, err := testenv.CountEvents(ctx, suite.Client, g, "CrashLoopBackOff"); err != nil || n != 1 {
			return fmt.Errorf("%d CrashLoopBackOff events (%w)", n, err)
		}
		return nil
	})

	crashing.Status.ContainerStatuses = nil
	markReady(t, pods[1:])
	testenv.Eventually(t, "Ready, no longer Degraded", func(ctx context.Context) error {
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(g), got); err != nil {
			return err
		}
		if r, d := status(conditions.Ready), status(conditions.Degraded); r.Status != metav1.ConditionTrue || d.Status != metav1.ConditionFalse {
			return fmt.Errorf("Ready %+v, Degraded %+v", r, d)
		}
		return nil
	})
}

// In a namespace that enforces the restricted Pod Security level, the API
// server refuses gordon pods that may run as root: the Gordon says so
// (Degraded Refused, with the server's message, one Warning event) and does
// not mark its generation observed; spec.gordon.runAsUser makes its pods
// meet the level, and they are created.
func TestRestrictedNamespaceRefusesRootPodsUntilRunAsUser(t *testing.T) {
	ns := suite.Namespace(t, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	ctx := context.Background()
	g := createGordon(t, ns, "restricted", 2)
	got := &gordonv1.Gordon{}
	testenv.Eventually(t, "Degraded Refused", func(ctx context.Context) error {
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(g), got); err != nil {
			return err
		}
		if d := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded); d == nil || d.Status != metav1.ConditionTrue || d.Reason != conditions.ReasonRefused {
			return fmt.Errorf("Degraded %+v", d)
		}
		return nil
	})
	if d := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded); !strings.Contains(d.Message, "violates PodSecurity") || !strings.Contains(d.Message, "runAsNonRoot") {
		t.Errorf("Degraded says %q, want the API server's message", d.Message)
	}
	if got.Status.ObservedGeneration == got.Generation {
		t.Errorf("observedGeneration %d: the generation whose pods were refused is marked observed", got.Status.ObservedGeneration)
	}
	testenv.Reported(t, suite.Client, got, got.Status.Conditions, conditions.ReasonRefused)
	if n, err := testenv.CountEvents(ctx, suite.Client, g, ReasonCreateFail); err != nil || n != 0 {
		t.Errorf("%d %s events besides (%v)", n, ReasonCreateFail, err)
	}

	if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(g), got); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(got.DeepCopy()) // the operator writes the status meanwhile
	got.Spec.Gordon.RunAsUser = ptr.To[int64](65532)
	if err := suite.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	pods := waitPods(t, g, 2)
	for _, p := range pods {
		if sc := p.Spec.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 65532 || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Errorf("pod %s runs with %+v, want runAsNonRoot as user 65532", p.Name, sc)
		}
	}
	testenv.Eventually(t, "no longer Degraded, generation observed", func(ctx context.Context) error {
		if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(g), got); err != nil {
			return err
		}
		if d := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded); d == nil || d.Status != metav1.ConditionFalse || got.Status.ObservedGeneration != got.Generation {
			return fmt.Errorf("Degraded %+v, observedGeneration %d of %d", d, got.Status.ObservedGeneration, got.Generation)
		}
		return nil
	})
}

// One Event per scaling step, not per pod: an Event is an API write, and
// one per pod doubled the operator's writes.
func TestOneEventPerScalingStep(t *testing.T) {
	ns := suite.Namespace(t, nil)
	g := createGordon(t, ns, "told", 3)
	waitPods(t, g, 3)
	waitEvent(t, g, "Created", "Scheduled 3 pods: gordon-")

	setReplicas(t, g, 1)
	waitPods(t, g, 1)
	waitEvent(t, g, "Deleted", "Removed 2 pods: gordon-")
}

// waitEvent waits for an Event of reason about g whose message starts with
// prefix, and fails when g has any other Event of that reason.
func waitEvent(t *testing.T, g *gordonv1.Gordon, reason, prefix string) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("a %s Event %q…", reason, prefix), func(ctx context.Context) error {
		var list corev1.EventList
		if err := suite.Client.List(ctx, &list, client.InNamespace(g.Namespace)); err != nil {
			return err
		}
		var messages []string
		for _, e := range list.Items {
			if e.InvolvedObject.UID == g.UID && e.Reason == reason {
				messages = append(messages, e.Message)
			}
		}
		switch {
		case len(messages) == 1 && strings.HasPrefix(messages[0], prefix):
			return nil
		case len(messages) > 1:
			t.Fatalf("%d %s Events, want one: %q", len(messages), reason, messages)
		}
		return fmt.Errorf("%s Events: %q", reason, messages)
	})
}

// The pass that creates the pods writes no status: their creation events
// bring the Gordon back at once, and that pass writes the first status,
// with the pods in it (a status write per step would cost a request on the
// Gordons' rate limiter for a report stale when written).
func TestFirstStatusListsThePods(t *testing.T) {
	ns := suite.Namespace(t, nil)
	w, err := suite.Client.Watch(context.Background(), &gordonv1.GordonList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	g := createGordon(t, ns, "reported", 3)
	timeout := time.After(time.Minute)
	for {
		select {
		case ev := <-w.ResultChan():
			got, ok := ev.Object.(*gordonv1.Gordon)
			if !ok || ev.Type != watch.Modified {
				continue
			}
			s := got.Status
			if len(s.Pods) != 3 || s.Replicas != 3 || s.ObservedGeneration != g.Generation {
				t.Fatalf("a status written before the pods were seen: %+v", s)
			}
			return
		case <-timeout:
			t.Fatal("no status written in a minute")
		}
	}
}
