package apply_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/testenv"
)

// ApplyChanged against a real API server: the second apply of the same
// configuration to an unchanged object is skipped, and so is one after a
// status write or a change to what the configuration does not set; an edit
// by someone else of what it sets, or a configuration that drops a field,
// applies again and wins.
func TestApplyChanged(t *testing.T) {
	cfg := testenv.Start(t, "operator.prgcont.cz_gordons.yaml")
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	owner := apply.FieldOwner("apply-test")
	cm := func(data map[string]string) *corev1ac.ConfigMapApplyConfiguration {
		return corev1ac.ConfigMap("settings", "default").WithData(data)
	}
	live := func() *corev1.ConfigMap {
		var got corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "settings"}, &got); err != nil {
			t.Fatal(err)
		}
		return &got
	}
	step := func(what string, obj *corev1ac.ConfigMapApplyConfiguration, seen client.Object, wantApplied bool, wantData map[string]string) {
		t.Helper()
		applied, err := owner.ApplyChanged(ctx, c, obj, seen)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if applied != wantApplied {
			t.Errorf("%s: applied = %v, want %v", what, applied, wantApplied)
		}
		if got := live().Data; !maps.Equal(got, wantData) {
			t.Errorf("%s: data %v, want %v", what, got, wantData)
		}
	}

	step("the first apply", cm(map[string]string{"a": "1", "b": "2"}), &corev1.ConfigMap{}, true, map[string]string{"a": "1", "b": "2"})
	// What the apply created is Unseen to a cache that does not show it
	// yet; what an apply failed to create is not.
	behind := fake.NewClientBuilder().Build()
	var u *apply.Unseen
	if err := apply.Get(ctx, behind, c, client.ObjectKey{Namespace: "default", Name: "settings"}, &corev1.ConfigMap{}); !errors.As(err, &u) {
		t.Errorf("Get of the ConfigMap the apply created, through a cache behind: %v, want Unseen", err)
	}
	if _, err := owner.ApplyChanged(ctx, c, corev1ac.ConfigMap("Not_A_Name", "default"), &corev1.ConfigMap{}); err == nil {
		t.Fatal("an apply of an invalid name succeeded")
	}
	if err := apply.Get(ctx, behind, c, client.ObjectKey{Namespace: "default", Name: "Not_A_Name"}, &corev1.ConfigMap{}); errors.As(err, &u) {
		t.Errorf("Get of what an apply failed to create: %v, want it read from the API server", err)
	}
	step("the same again", cm(map[string]string{"a": "1", "b": "2"}), live(), false, map[string]string{"a": "1", "b": "2"})

	edited := live()
	edited.Data["a"] = "edited"
	if err := c.Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	step("after someone's edit", cm(map[string]string{"a": "1", "b": "2"}), live(), true, map[string]string{"a": "1", "b": "2"})
	step("and once repaired", cm(map[string]string{"a": "1", "b": "2"}), live(), false, map[string]string{"a": "1", "b": "2"})
	step("a configuration without b", cm(map[string]string{"a": "1"}), live(), true, map[string]string{"a": "1"})

	stale := live()
	step("a change", cm(map[string]string{"a": "3"}), stale, true, map[string]string{"a": "3"})
	step("the same seen through a cache that lags", cm(map[string]string{"a": "3"}), stale, true, map[string]string{"a": "3"})

	// A status write changes the resourceVersion, not what was applied.
	// An apply fills its configuration with the answer: each apply gets a
	// new one, as each reconcile builds its own.
	svc := func() *corev1ac.ServiceApplyConfiguration {
		return corev1ac.Service("db", "default").WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeLoadBalancer).WithPorts(corev1ac.ServicePort().WithPort(27017)))
	}
	var s corev1.Service
	if applied, err := owner.ApplyChanged(ctx, c, svc(), &s); err != nil || !applied {
		t.Fatalf("applying the Service: %v, %v", applied, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "db"}, &s); err != nil {
		t.Fatal(err)
	}
	before := s.ResourceVersion
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
	if err := c.Status().Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	if s.ResourceVersion == before {
		t.Fatal("the status write left the resourceVersion")
	}
	if applied, err := owner.ApplyChanged(ctx, c, svc(), &s); err != nil || applied {
		t.Errorf("after a status write: applied = %v (%v), want it skipped", applied, err)
	}
	// What the configuration does not set is someone else's: an apply
	// would leave it, so it costs none.
	s.Labels = map[string]string{"added-by": "someone"}
	s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	if err := c.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	if applied, err := owner.ApplyChanged(ctx, c, svc(), &s); err != nil || applied {
		t.Errorf("after someone added a label and set a field the configuration does not: applied = %v (%v), want it skipped", applied, err)
	}
	// A field the configuration sets, changed, and a list of it grown.
	edits := map[string]func(*corev1.Service){
		"changed the type": func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort },
		"added a port": func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "b", Port: 9000})
		},
	}
	for what, edit := range edits {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "db"}, &s); err != nil {
			t.Fatal(err)
		}
		edit(&s)
		if len(s.Spec.Ports) > 1 {
			s.Spec.Ports[0].Name = "a" // two ports need names
		}
		if err := c.Update(ctx, &s); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if applied, err := owner.ApplyChanged(ctx, c, svc(), &s); err != nil || !applied {
			t.Errorf("after someone %s: applied = %v (%v), want it applied", what, applied, err)
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "db"}, &s); err != nil {
			t.Fatal(err)
		}
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer || s.Spec.Ports[0].Port != 27017 || s.Labels["added-by"] != "someone" ||
			s.Spec.SessionAffinity != corev1.ServiceAffinityClientIP {
			t.Errorf("after someone %s and the apply: type %s, port %d, labels %v, affinity %s; want LoadBalancer, 27017 and theirs kept",
				what, s.Spec.Type, s.Spec.Ports[0].Port, s.Labels, s.Spec.SessionAffinity)
		}
		if applied, err := owner.ApplyChanged(ctx, c, svc(), &s); err != nil || applied {
			t.Errorf("after someone %s, once repaired: applied = %v (%v), want it skipped", what, applied, err)
		}
	}

	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default", UID: "another-object"}}
	other.ResourceVersion = live().ResourceVersion
	step("another object's identity", cm(map[string]string{"a": "3"}), other, true, map[string]string{"a": "3"})
}

// ApplyChanged remembers a child while it lives: once the cache sees it
// deleted, its memory goes.
func TestApplyChangedForgetsDeletedObjects(t *testing.T) {
	cfg := testenv.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	informers, err := cache.New(cfg, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := apply.FollowCache(ctx, informers, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	owner := apply.FieldOwner("apply-test")
	before := apply.Remembered()
	var live corev1.ConfigMap
	if _, err := owner.ApplyChanged(ctx, c, corev1ac.ConfigMap("short-lived", "default").WithData(map[string]string{"a": "1"}), &live); err != nil {
		t.Fatal(err)
	}
	if n := apply.Remembered(); n != before+1 {
		t.Fatalf("%d objects remembered after an apply, want %d", n, before+1)
	}
	// Created by this process, it is Unseen until the cache shows it; a
	// reader that never shows it then sends Get to the API server.
	never := fake.NewClientBuilder().Build()
	testenv.EventuallyWithin(t, 10*time.Second, "the created ConfigMap no longer Unseen once the cache shows it", func(ctx context.Context) error {
		return apply.Get(ctx, never, c, client.ObjectKey{Namespace: "default", Name: "short-lived"}, &corev1.ConfigMap{})
	})
	if err := c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "short-lived", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the deleted ConfigMap forgotten", func(context.Context) error {
		if n := apply.Remembered(); n != before {
			return fmt.Errorf("%d objects remembered, want %d", n, before)
		}
		return nil
	})
}

// Holds against a real API server: a Deployment as the server keeps it,
// with the defaults it adds, holds the configuration it was applied from,
// and not one whose image, annotation or resources differ, nor itself once
// a person edited a field the configuration sets.
func TestHolds(t *testing.T) {
	cfg := testenv.Start(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	owner := apply.FieldOwner("apply-test")
	deployment := func(image, version, memory string) *appsv1ac.DeploymentApplyConfiguration {
		labels := map[string]string{"app": "held"}
		return appsv1ac.Deployment("held", "default").WithSpec(appsv1ac.DeploymentSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).WithAnnotations(map[string]string{"version": version}).
				WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().
					WithName("server").WithImage(image).
					WithPorts(corev1ac.ContainerPort().WithContainerPort(3306)).
					WithResources(corev1ac.ResourceRequirements().
						WithRequests(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)})).
					WithReadinessProbe(corev1ac.Probe().WithExec(corev1ac.ExecAction().WithCommand("true")))))))
	}
	if err := owner.Apply(ctx, c, deployment("mysql:5.7", "1", "256Mi")); err != nil {
		t.Fatal(err)
	}
	live := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "held"}, live); err != nil {
		t.Fatal(err)
	}
	if p := live.Spec.Template.Spec.Containers[0].Ports[0].Protocol; p != corev1.ProtocolTCP {
		t.Fatalf("the server added no default to the port (protocol %q): the test shows nothing", p)
	}
	for _, tc := range []struct {
		what string
		obj  *appsv1ac.DeploymentApplyConfiguration
		want bool
	}{
		{"the configuration it was applied from", deployment("mysql:5.7", "1", "256Mi"), true},
		{"another image", deployment("mysql:8.0", "1", "256Mi"), false},
		{"another annotation", deployment("mysql:5.7", "2", "256Mi"), false},
		{"other resources", deployment("mysql:5.7", "1", "512Mi"), false},
	} {
		if got, err := apply.Holds(tc.obj, live); err != nil || got != tc.want {
			t.Errorf("%s: Holds = %v (%v), want %v", tc.what, got, err, tc.want)
		}
	}
	live.Spec.Template.Spec.Containers[0].Image = "someone/else:1"
	if err := c.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	if got, err := apply.Holds(deployment("mysql:5.7", "1", "256Mi"), live); err != nil || got {
		t.Errorf("a person's edit of the image: Holds = %v (%v), want false", got, err)
	}
}
