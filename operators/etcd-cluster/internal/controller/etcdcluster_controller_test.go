package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/pods"
	"github.com/operator-workshops/workshop/operators/common/testenv"
	etcdv1 "github.com/operator-workshops/workshop/operators/etcd-cluster/api/v1beta2"
)

const (
	key   = "/here"
	value = "test"
)

// workshopCluster is the workshop's manifest: size 3, version 3.2.13 (no
// learners, no leader moves), repository docker.io/prgcont/etcd.
func workshopCluster(ns string) *etcdv1.EtcdCluster {
	return &etcdv1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "example-etcd-cluster", Namespace: ns},
		Spec:       etcdv1.ClusterSpec{Size: 3, Version: "3.2.13", Repository: "docker.io/prgcont/etcd"},
	}
}

// running creates the workshop's cluster, changed by edit, in a namespace of
// its own with a kubelet, and returns it once its members are healthy.
func running(t *testing.T, edit func(*etcdv1.ClusterSpec)) *etcdv1.EtcdCluster {
	t.Helper()
	c, _ := runningOn(t, edit)
	return c
}

// runningOn is running, and also returns the cluster's kubelet.
func runningOn(t *testing.T, edit func(*etcdv1.ClusterSpec)) (*etcdv1.EtcdCluster, *kubelet) {
	t.Helper()
	ns := suite.Namespace(t, nil)
	k := startKubelet(t, suite.Client, ns)
	c := workshopCluster(ns)
	if edit != nil {
		edit(&c.Spec)
	}
	create(t, c)
	return waitHealthy(t, c, c.Spec.Size), k
}

func create(t *testing.T, c *etcdv1.EtcdCluster) {
	t.Helper()
	if err := suite.Client.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

func get(ctx context.Context, c *etcdv1.EtcdCluster) (*etcdv1.EtcdCluster, error) {
	got := &etcdv1.EtcdCluster{}
	return got, suite.Client.Get(ctx, client.ObjectKeyFromObject(c), got)
}

// update changes the spec of c with change, retrying on conflicts with the
// operator's status writes.
func update(t *testing.T, c *etcdv1.EtcdCluster, change func(*etcdv1.ClusterSpec)) {
	t.Helper()
	testenv.Eventually(t, "the spec update", func(ctx context.Context) error {
		got, err := get(ctx, c)
		if err != nil {
			return err
		}
		change(&got.Spec)
		return suite.Client.Update(ctx, got)
	})
}

// waitHealthy waits until the status says n members, all ready, nothing in
// progress, and the API server holds exactly their pods and volumes.
func waitHealthy(t *testing.T, c *etcdv1.EtcdCluster, n int) *etcdv1.EtcdCluster {
	t.Helper()
	var got *etcdv1.EtcdCluster
	testenv.Eventually(t, fmt.Sprintf("%d healthy members", n), func(ctx context.Context) error {
		var err error
		if got, err = get(ctx, c); err != nil {
			return err
		}
		st := got.Status
		switch {
		case st.ObservedGeneration != got.Generation:
			return fmt.Errorf("status of generation %d, spec is %d", st.ObservedGeneration, got.Generation)
		case len(st.Members.Ready) != n || len(st.Members.Unready) != 0:
			return fmt.Errorf("members %+v", st.Members)
		case !conditions.IsTrue(st.Conditions, Available) || !conditions.IsTrue(st.Conditions, conditions.Ready):
			return fmt.Errorf("not Available and Ready: %+v", st.Conditions)
		case conditions.IsTrue(st.Conditions, conditions.Progressing):
			return fmt.Errorf("still Progressing: %+v", st.Conditions)
		}
		pods, volumes := children(ctx, t, c)
		if len(pods) != n || len(volumes) != n {
			return fmt.Errorf("pods %v, volumes %v", pods, volumes)
		}
		return nil
	})
	return got
}

// children are the names of the member pods and volumes of c.
func children(ctx context.Context, t *testing.T, c *etcdv1.EtcdCluster) (pods, volumes []string) {
	t.Helper()
	sel := []client.ListOption{client.InNamespace(c.Namespace), client.MatchingLabels{"etcd_cluster": c.Name}}
	var pl corev1.PodList
	var vl corev1.PersistentVolumeClaimList
	if err := suite.Client.List(ctx, &pl, sel...); err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.List(ctx, &vl, sel...); err != nil {
		t.Fatal(err)
	}
	for _, p := range pl.Items {
		pods = append(pods, p.Name)
	}
	for _, v := range vl.Items {
		if v.DeletionTimestamp.IsZero() {
			volumes = append(volumes, v.Name)
		}
	}
	slices.Sort(pods)
	slices.Sort(volumes)
	return pods, volumes
}

// readyEndpoints are the client URLs of the members the status of c says
// are ready, where a client of the <name>-client Service would go.
func readyEndpoints(t *testing.T, c *etcdv1.EtcdCluster) []string {
	t.Helper()
	got, err := get(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	var endpoints []string
	for _, m := range got.Status.Members.Ready {
		endpoints = append(endpoints, HeadlessService(got).ClientURL(m))
	}
	if len(endpoints) == 0 {
		t.Fatalf("no member of %s is ready: %+v", c.Name, got.Status.Members)
	}
	return endpoints
}

func put(t *testing.T, c *etcdv1.EtcdCluster) {
	t.Helper()
	if err := etcd.put(readyEndpoints(t, c)[0], key, value); err != nil {
		t.Fatal(err)
	}
}

// expectKey reads the key back through every ready member, linearizably: a
// cluster that lost its data, or was bootstrapped again, does not have it.
func expectKey(t *testing.T, c *etcdv1.EtcdCluster) {
	t.Helper()
	for _, ep := range readyEndpoints(t, c) {
		got, ok, err := etcd.get(ep, key)
		if err != nil {
			t.Fatalf("get %s from %s: %v", key, ep, err)
		}
		if !ok || got != value {
			t.Fatalf("get %s from %s = %q (found: %v), want %q", key, ep, got, ok, value)
		}
	}
}

// memberIDs lists the members etcd knows, name (or peer URL) to ID.
func memberIDs(t *testing.T, c *etcdv1.EtcdCluster) map[string]uint64 {
	t.Helper()
	members, err := etcd.MemberList(context.Background(), readyEndpoints(t, c)[0], false)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, m := range members {
		name := m.Name
		if name == "" {
			name = strings.Join(m.PeerURLs, ",")
		}
		out[name] = m.ID
	}
	return out
}

// waitRolled waits until every member pod of c runs image and is ready: a
// status written before the last member restarted may still say healthy.
func waitRolled(t *testing.T, c *etcdv1.EtcdCluster, image string) {
	t.Helper()
	testenv.Eventually(t, "every pod ready on "+image, func(ctx context.Context) error {
		var list corev1.PodList
		if err := suite.Client.List(ctx, &list, client.InNamespace(c.Namespace)); err != nil {
			return err
		}
		for _, p := range list.Items {
			if img := p.Spec.Containers[0].Image; img != image || !pods.Ready(&p) || !p.DeletionTimestamp.IsZero() {
				return fmt.Errorf("%s runs %s, ready %v", p.Name, img, pods.Ready(&p))
			}
		}
		return nil
	})
}

func TestVersionChangeRollsMembersKeepingData(t *testing.T) {
	c := running(t, func(s *etcdv1.ClusterSpec) { s.Version = "3.5.0" })
	put(t, c)
	before := memberIDs(t, c)

	update(t, c, func(s *etcdv1.ClusterSpec) { s.Version = "3.6.0" })
	waitRolled(t, c, "docker.io/prgcont/etcd:v3.6.0")
	got := waitHealthy(t, c, 3)
	if got.Status.CurrentVersion != "3.6.0" || got.Status.TargetVersion != "" {
		t.Errorf("versions %q -> %q", got.Status.CurrentVersion, got.Status.TargetVersion)
	}
	expectKey(t, c)
	if after := memberIDs(t, c); !maps.Equal(before, after) {
		t.Errorf("members %v became %v: a version roll keeps the members", before, after)
	}
	// Each member restarted as the roll planned: nothing for a person.
	if w := warnings(t, got); len(w) > 0 {
		t.Errorf("Warning events %v during a roll", w)
	}
}

// warnings counts the Warning events about c by reason, an event told
// again (a series) as many times as it was.
func warnings(t *testing.T, c *etcdv1.EtcdCluster) map[string]int {
	t.Helper()
	n, err := testenv.EventsByReason(context.Background(), suite.Client, c, corev1.EventTypeWarning)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Two edits in a row, each one minor version (the CRD takes both), would
// skip one for members that still run the first: the operator moves none,
// and says so until spec.version is a step they can take.
func TestVersionSkipAcrossEditsMovesNoMember(t *testing.T) {
	c := running(t, func(s *etcdv1.ClusterSpec) { s.Version = "3.4.0" })
	put(t, c)
	update(t, c, func(s *etcdv1.ClusterSpec) { s.Paused = true })
	update(t, c, func(s *etcdv1.ClusterSpec) { s.Version = "3.5.0" })
	update(t, c, func(s *etcdv1.ClusterSpec) { s.Version = "3.6.0" })
	update(t, c, func(s *etcdv1.ClusterSpec) { s.Paused = false })

	var got *etcdv1.EtcdCluster
	testenv.Eventually(t, "Degraded VersionStep", func(ctx context.Context) error {
		var err error
		if got, err = get(ctx, c); err != nil {
			return err
		}
		d := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded)
		if d == nil || d.Status != metav1.ConditionTrue || d.Reason != ReasonVersionStep {
			return fmt.Errorf("Degraded %+v", d)
		}
		return nil
	})
	if d := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded); !strings.Contains(d.Message, "members run etcd 3.4.0") || !strings.Contains(d.Message, "a 3.4 or 3.5 release") {
		t.Errorf("Degraded says %q: not what runs, nor what to set", d.Message)
	}
	if got.Status.ObservedGeneration >= got.Generation {
		t.Errorf("observedGeneration %d for generation %d, which no member can move to", got.Status.ObservedGeneration, got.Generation)
	}
	testenv.Reported(t, suite.Client, got, got.Status.Conditions, ReasonVersionStep)
	var pods corev1.PodList
	if err := suite.Client.List(context.Background(), &pods, client.InNamespace(c.Namespace)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if img := p.Spec.Containers[0].Image; img != "docker.io/prgcont/etcd:v3.4.0" {
			t.Errorf("%s runs %s: a member was moved past a minor version", p.Name, img)
		}
	}

	// A step they can take: every member moves, the data with them.
	update(t, c, func(s *etcdv1.ClusterSpec) { s.Version = "3.5.0" })
	waitRolled(t, c, "docker.io/prgcont/etcd:v3.5.0")
	got = waitHealthy(t, c, 3)
	if got.Status.CurrentVersion != "3.5.0" {
		t.Errorf("current version %q, want 3.5.0", got.Status.CurrentVersion)
	}
	expectKey(t, c)
	// Told once, however many passes saw it; the roll after it, nothing.
	if w := warnings(t, got); !maps.Equal(w, map[string]int{ReasonVersionStep: 1}) {
		t.Errorf("Warning events %v, want one %s", w, ReasonVersionStep)
	}
}

// A version whose image never pulls stops the roll at its first member,
// Degraded with the kubelet's reason; taking the version back replaces that
// member's pod at once, and the cluster moves to the version it names.
func TestVersionWithoutImageIsTakenBack(t *testing.T) {
	c, k := runningOn(t, func(s *etcdv1.ClusterSpec) { s.Version = "3.5.0" })
	put(t, c)
	k.imageMissing("docker.io/prgcont/etcd:v3.6.99")
	update(t, c, func(s *etcdv1.ClusterSpec) { s.Version = "3.6.99" })

	var got *etcdv1.EtcdCluster
	testenv.Eventually(t, "Degraded ImagePullBackOff", func(ctx context.Context) error {
		var err error
		if got, err = get(ctx, c); err != nil {
			return err
		}
		d := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded)
		if d == nil || d.Status != metav1.ConditionTrue || d.Reason != "ImagePullBackOff" || !strings.Contains(d.Message, "v3.6.99") {
			return fmt.Errorf("Degraded %+v", d)
		}
		return nil
	})
	testenv.Reported(t, suite.Client, got, got.Status.Conditions, "ImagePullBackOff")
	// The roll waits on that member: the others still run 3.5.0.
	testenv.Consistently(t, 3*time.Second, "one member on the missing image", func(ctx context.Context) error {
		var pods corev1.PodList
		if err := suite.Client.List(ctx, &pods, client.InNamespace(c.Namespace)); err != nil {
			return err
		}
		n := 0
		for _, p := range pods.Items {
			if p.Spec.Containers[0].Image == "docker.io/prgcont/etcd:v3.6.99" {
				n++
			}
		}
		if n > 1 {
			return fmt.Errorf("%d members on an image that never pulls", n)
		}
		return nil
	})

	update(t, c, func(s *etcdv1.ClusterSpec) { s.Version = "3.5.1" })
	waitRolled(t, c, "docker.io/prgcont/etcd:v3.5.1")
	if got := waitHealthy(t, c, 3); got.Status.CurrentVersion != "3.5.1" {
		t.Errorf("current version %q, want 3.5.1", got.Status.CurrentVersion)
	}
	expectKey(t, c)
}

// The operator stops after etcd added a member and before its pod exists (a
// quota refuses the pod): the new operator starts that member, it does not
// add another.
func TestRestartBetweenMemberAddAndPod(t *testing.T) {
	c := running(t, nil)
	ns := c.Namespace
	put(t, c)

	ctx := context.Background()
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-more-pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3")}},
	}
	if err := suite.Client.Create(ctx, quota); err != nil {
		t.Fatal(err)
	}
	// envtest has no quota controller: the test says the quota is used up.
	quota.Status = corev1.ResourceQuotaStatus{
		Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3")},
		Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3")},
	}
	if err := suite.Client.Status().Update(ctx, quota); err != nil {
		t.Fatal(err)
	}
	// The API server admits against the quota once its informer has it: wait
	// until a pod is refused.
	testenv.Eventually(t, "the quota to refuse pods", func(ctx context.Context) error {
		probe := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "quota-probe-"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "none"}}},
		}
		if err := suite.Client.Create(ctx, probe); err != nil {
			return nil
		}
		_ = suite.Client.Delete(ctx, probe)
		return fmt.Errorf("pod %s was admitted", probe.Name)
	})
	update(t, c, func(s *etcdv1.ClusterSpec) { s.Size = 4 })
	testenv.Eventually(t, "etcd to list a fourth member", func(context.Context) error {
		if ids := memberIDs(t, c); len(ids) != 4 {
			return fmt.Errorf("members %v", ids)
		}
		return nil
	})
	if pods, _ := children(ctx, t, c); len(pods) != 3 {
		t.Fatalf("pods %v: the quota should hold the fourth", pods)
	}

	suite.Restart(t)
	if err := suite.Client.Delete(ctx, quota); err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, c, 4)
	if ids := memberIDs(t, c); len(ids) != 4 {
		t.Errorf("etcd lists %v, want 4 members", ids)
	}
	expectKey(t, c)
}

func TestPausedClusterIsNotChanged(t *testing.T) {
	c := running(t, nil)

	update(t, c, func(s *etcdv1.ClusterSpec) { s.Paused, s.Size = true, 5 })
	testenv.Eventually(t, "the status to say paused", func(ctx context.Context) error {
		got, err := get(ctx, c)
		if err != nil {
			return err
		}
		if !got.Status.ControlPaused || got.Status.ObservedGeneration != got.Generation {
			return fmt.Errorf("status %+v", got.Status)
		}
		// Ready describes the spec of 5, which the pause holds back, and
		// Progressing says what the next step would be.
		ready := meta.FindStatusCondition(got.Status.Conditions, conditions.Ready)
		progressing := meta.FindStatusCondition(got.Status.Conditions, conditions.Progressing)
		if ready == nil || ready.Status != metav1.ConditionFalse || ready.ObservedGeneration != got.Generation ||
			progressing == nil || progressing.Reason != conditions.ReasonPaused || !strings.Contains(progressing.Message, "the next step is Add") {
			return fmt.Errorf("Ready %+v, Progressing %+v", ready, progressing)
		}
		return nil
	})
	// An operator that ignored the pause would have added a member within
	// a pass or two (requeueSoon apart): the fake etcd accepts an add as soon
	// as a quorum runs.
	testenv.Consistently(t, 5*time.Second, "a paused cluster of 3", func(ctx context.Context) error {
		if ids := memberIDs(t, c); len(ids) != 3 {
			return fmt.Errorf("etcd lists %v", ids)
		}
		if pods, _ := children(ctx, t, c); len(pods) != 3 {
			return fmt.Errorf("pods %v", pods)
		}
		return nil
	})

	update(t, c, func(s *etcdv1.ClusterSpec) { s.Paused = false })
	waitHealthy(t, c, 5)
}

// With no node to run the pods, the first members are created and the
// status says the cluster is starting. A cluster annotated for a
// cluster-wide operator is left alone.

func TestWorkshopClusterScalesUpAndDownKeepingData(t *testing.T) {
	c := running(t, nil)
	ns := c.Namespace
	st := c.Status
	if st.Phase != etcdv1.PhaseRunning || st.ServiceName != "example-etcd-cluster-client" || st.ClientPort != 2379 || st.CurrentVersion != "3.2.13" || st.Size != 3 {
		t.Errorf("status = %+v", st)
	}
	ctx := context.Background()
	pod := &corev1.Pod{}
	if err := suite.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "example-etcd-cluster-0"}, pod); err != nil {
		t.Fatal(err)
	}
	if pod.Labels["etcd_cluster"] != "example-etcd-cluster" || pod.Labels["app"] != "etcd" ||
		pod.Spec.Containers[0].Image != "docker.io/prgcont/etcd:v3.2.13" {
		t.Errorf("pod labels %v, image %s", pod.Labels, pod.Spec.Containers[0].Image)
	}
	for _, name := range []string{"example-etcd-cluster", "example-etcd-cluster-client"} {
		svc := &corev1.Service{}
		if err := suite.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, svc); err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
		if svc.Spec.Selector["etcd_cluster"] != c.Name {
			t.Errorf("service %s selects %v", name, svc.Spec.Selector)
		}
	}

	// A drain may evict a member only while a quorum stays.
	budget := func(want int) {
		t.Helper()
		testenv.Eventually(t, fmt.Sprintf("a PodDisruptionBudget of minAvailable %d", want), func(ctx context.Context) error {
			pdb := &policyv1.PodDisruptionBudget{}
			if err := suite.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: c.Name}, pdb); err != nil {
				return err
			}
			got, err := get(ctx, c)
			if err != nil {
				return err
			}
			if m := pdb.Spec.MinAvailable; m == nil || m.IntValue() != want || pdb.Spec.Selector.MatchLabels["etcd_cluster"] != c.Name || !metav1.IsControlledBy(pdb, got) {
				return fmt.Errorf("minAvailable %v, selector %v, owners %v", m, pdb.Spec.Selector, pdb.OwnerReferences)
			}
			return nil
		})
	}
	budget(2)

	put(t, c)
	update(t, c, func(s *etcdv1.ClusterSpec) { s.Size = 5 })
	waitHealthy(t, c, 5)
	expectKey(t, c)
	if n := len(memberIDs(t, c)); n != 5 {
		t.Fatalf("etcd lists %d members, want 5", n)
	}
	budget(3)

	update(t, c, func(s *etcdv1.ClusterSpec) { s.Size = 3 })
	waitHealthy(t, c, 3)
	expectKey(t, c)
	ids := memberIDs(t, c)
	for _, name := range []string{"example-etcd-cluster-0", "example-etcd-cluster-1", "example-etcd-cluster-2"} {
		if _, ok := ids[name]; !ok {
			t.Errorf("etcd lists %v, want members 0 to 2", ids)
		}
	}
}

func TestLearnersFromEtcd34(t *testing.T) {
	c := running(t, func(s *etcdv1.ClusterSpec) { s.Size, s.Version = 1, "3.6.0" })
	ns := c.Namespace
	put(t, c)

	update(t, c, func(s *etcdv1.ClusterSpec) { s.Size = 3 })
	waitHealthy(t, c, 3)
	expectKey(t, c)
	var events corev1.EventList
	if err := suite.Client.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	promoted := 0
	for _, e := range events.Items {
		if e.Reason == "Promote" {
			promoted++
		}
	}
	if promoted != 2 {
		t.Errorf("%d Promote events, want 2 (each member joins as a learner)", promoted)
	}
}

// The coreos operator kept data in emptyDir: when every pod died, the data
// was gone. Here the pods come back on their volumes.
func TestAllPodsDeletedComeBackWithTheirData(t *testing.T) {
	c := running(t, nil)
	ns := c.Namespace
	put(t, c)
	before := memberIDs(t, c)

	ctx := context.Background()
	var old corev1.PodList
	if err := suite.Client.List(ctx, &old, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns),
		client.MatchingLabels{"etcd_cluster": c.Name}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "new pods, all ready", func(ctx context.Context) error {
		var now corev1.PodList
		if err := suite.Client.List(ctx, &now, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(now.Items) != 3 {
			return fmt.Errorf("%d pods", len(now.Items))
		}
		for _, p := range now.Items {
			if slices.ContainsFunc(old.Items, func(o corev1.Pod) bool { return o.UID == p.UID }) || !pods.Ready(&p) {
				return fmt.Errorf("%s is the old pod, or not ready", p.Name)
			}
		}
		return nil
	})
	waitHealthy(t, c, 3)
	expectKey(t, c)
	if after := memberIDs(t, c); !maps.Equal(before, after) {
		t.Errorf("members %v became %v: the pods should come back as the same members", before, after)
	}
}

// A cluster that served keeps that in a mark on its peer Service, not in
// its status: with every pod and volume gone, its data is gone, and it is
// reported so instead of being started empty under the same name.
func TestEveryPodAndVolumeGoneIsNotStartedEmpty(t *testing.T) {
	c := running(t, nil)
	ns := c.Namespace
	ctx := context.Background()
	testenv.Eventually(t, "the peer Service marked served", func(ctx context.Context) error {
		var peer corev1.Service
		if err := suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: c.Name}, &peer); err != nil {
			return err
		}
		if peer.Annotations[servedAnnotation] != "true" {
			return fmt.Errorf("annotations %v", peer.Annotations)
		}
		return nil
	})
	// Paused, the operator brings no pod back while everything goes.
	update(t, c, func(s *etcdv1.ClusterSpec) { s.Paused = true })
	testenv.Eventually(t, "the status to say paused", func(ctx context.Context) error {
		if got, err := get(ctx, c); err != nil || !got.Status.ControlPaused {
			return fmt.Errorf("not paused yet (%w)", err)
		}
		return nil
	})
	for _, o := range []client.Object{&corev1.Pod{}, &corev1.PersistentVolumeClaim{}} {
		if err := suite.Client.DeleteAllOf(ctx, o, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "every pod and volume gone", func(ctx context.Context) error {
		if pods, volumes := children(ctx, t, c); len(pods)+len(volumes) > 0 {
			return fmt.Errorf("pods %v, volumes %v", pods, volumes)
		}
		return nil
	})
	// Whoever may write the status says the cluster never served.
	testenv.Eventually(t, "a forged status", func(ctx context.Context) error {
		forged, err := get(ctx, c)
		if err != nil {
			return err
		}
		forged.Status = etcdv1.ClusterStatus{Phase: etcdv1.PhaseCreating}
		return suite.Client.Status().Update(ctx, forged)
	})
	update(t, c, func(s *etcdv1.ClusterSpec) { s.Paused = false })
	testenv.Eventually(t, "the cluster reported lost", func(ctx context.Context) error {
		got, err := get(ctx, c)
		if err != nil {
			return err
		}
		if d := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded); d == nil || d.Reason != ReasonDataLost {
			return fmt.Errorf("Degraded %+v", d)
		}
		return nil
	})
	testenv.Consistently(t, 3*time.Second, "no member started empty", func(ctx context.Context) error {
		if pods, volumes := children(ctx, t, c); len(pods)+len(volumes) > 0 {
			return fmt.Errorf("pods %v, volumes %v", pods, volumes)
		}
		return nil
	})
}

// A member whose volume is gone cannot come back: it is removed and an
// empty member of the same name is added, which copies the data.
func TestMemberWithLostVolumeIsReplaced(t *testing.T) {
	c := running(t, nil)
	ns := c.Namespace
	put(t, c)
	before := memberIDs(t, c)

	ctx := context.Background()
	victim := "example-etcd-cluster-1"
	for _, o := range []client.Object{
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: victim}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: volumeName(victim)}},
	} {
		if err := suite.Client.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, victim+" to be replaced", func(context.Context) error {
		if id := memberIDs(t, c)[victim]; id == before[victim] || id == 0 {
			return fmt.Errorf("%s has ID %x, was %x", victim, id, before[victim])
		}
		return nil
	})
	waitHealthy(t, c, 3)
	expectKey(t, c)
}

// Two of three members stop answering, their pods and volumes still there
// (their node went away): without a quorum nothing is changed. The cluster
// says Failed and QuorumLost, etcd still lists its three members, and when
// the two come back the cluster is healthy again, with its members and its
// data. When the two members' volumes are gone as well, nothing is removed
// either: the member left and its volume are what a restore needs.
func TestQuorumLossIsReportedNotRepaired(t *testing.T) {
	lost := []string{"example-etcd-cluster-1", "example-etcd-cluster-2"}
	quorumLost := func(t *testing.T, c *etcdv1.EtcdCluster) {
		t.Helper()
		testenv.Eventually(t, "Failed, QuorumLost", func(ctx context.Context) error {
			got, err := get(ctx, c)
			if err != nil {
				return err
			}
			a := meta.FindStatusCondition(got.Status.Conditions, Available)
			p := meta.FindStatusCondition(got.Status.Conditions, conditions.Progressing)
			if got.Status.Phase != etcdv1.PhaseFailed || a == nil || a.Status != metav1.ConditionFalse || p == nil || p.Reason != "QuorumLost" {
				return fmt.Errorf("phase %q, conditions %+v", got.Status.Phase, got.Status.Conditions)
			}
			return nil
		})
	}
	// nothingRemoved checks for a while that etcd, asked through the member
	// left, still lists the members before, and that the API server holds
	// the pods and volumes named.
	nothingRemoved := func(t *testing.T, c *etcdv1.EtcdCluster, before map[string]uint64, pods, volumes []string) {
		t.Helper()
		testenv.Consistently(t, 3*time.Second, "nothing removed", func(ctx context.Context) error {
			if p, v := children(ctx, t, c); !slices.Equal(p, pods) || !slices.Equal(v, volumes) {
				return fmt.Errorf("pods %v, volumes %v", p, v)
			}
			members, err := etcd.MemberList(ctx, HeadlessService(c).ClientURL("example-etcd-cluster-0"), true)
			if err != nil {
				return err
			}
			ids := map[string]uint64{}
			for _, m := range members {
				ids[m.Name] = m.ID
			}
			if !maps.Equal(ids, before) {
				return fmt.Errorf("etcd lists %v, was %v", ids, before)
			}
			return nil
		})
	}
	all := []string{"example-etcd-cluster-0", "example-etcd-cluster-1", "example-etcd-cluster-2"}

	t.Run("members back", func(t *testing.T) {
		c, k := runningOn(t, nil)
		put(t, c)
		before := memberIDs(t, c)
		k.nodeDown(lost...)
		quorumLost(t, c)
		nothingRemoved(t, c, before, all, []string{"data-example-etcd-cluster-0", "data-example-etcd-cluster-1", "data-example-etcd-cluster-2"})
		k.nodeUp(lost...)
		waitHealthy(t, c, 3)
		expectKey(t, c)
		if after := memberIDs(t, c); !maps.Equal(before, after) {
			t.Errorf("members %v became %v", before, after)
		}
	})

	t.Run("volumes gone", func(t *testing.T) {
		c, k := runningOn(t, nil)
		before := memberIDs(t, c)
		// Both at once, as a node's loss takes them: one at a time, the
		// first would be replaced while the other two keep a quorum.
		k.nodeDown(lost...)
		quorumLost(t, c)
		// The volumes first: a pod deleted while its volume is there comes
		// back on it.
		ctx := context.Background()
		var gone []client.Object
		for _, name := range lost {
			gone = append(gone, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: volumeName(name)}})
		}
		for _, name := range lost {
			gone = append(gone, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: name}})
		}
		for _, o := range gone {
			if err := suite.Client.Delete(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		nothingRemoved(t, c, before, all[:1], []string{"data-example-etcd-cluster-0"})
	})
}

// Pods and volumes of a member etcd no longer lists are deleted, but only
// on a list read through raft from the leader: a follower's own copy may
// lag by a member just added, whose volume would go with its data.
func TestOrphanedMembers(t *testing.T) {
	ctx := context.Background()
	names := []string{"example-etcd-cluster-0", "example-etcd-cluster-1", "example-etcd-cluster-2"}

	t.Run("removed behind the operator's back", func(t *testing.T) {
		// As an operator that stopped between a removal and its cleanup
		// leaves it.
		c := running(t, nil)
		victim := names[2]
		before := memberIDs(t, c)
		if err := etcd.MemberRemove(ctx, HeadlessService(c).ClientURL(names[0]), before[victim]); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the Cleanup event", func(ctx context.Context) error {
			var events corev1.EventList
			if err := suite.Client.List(ctx, &events, client.InNamespace(c.Namespace)); err != nil {
				return err
			}
			for _, e := range events.Items {
				if e.Reason == "Cleanup" && strings.Contains(e.Message, victim) {
					return nil
				}
			}
			return fmt.Errorf("no Cleanup event naming %s among %d events", victim, len(events.Items))
		})
		waitHealthy(t, c, 3)
		for name, id := range memberIDs(t, c) {
			if id == before[victim] {
				t.Errorf("etcd lists removed member %x again, as %s", id, name)
			}
		}
	})

	t.Run("a follower's copy deletes nothing", func(t *testing.T) {
		c := running(t, nil)
		addr := HeadlessService(c)
		var urls []string
		for _, n := range names {
			urls = append(urls, addr.ClientURL(n))
		}
		// The first three members' copies stay at three members.
		etcd.lag(urls...)
		t.Cleanup(etcd.catchUp)
		update(t, c, func(s *etcdv1.ClusterSpec) { s.Size = 4 })
		waitHealthy(t, c, 4)
		before := memberIDs(t, c)

		// The operator loses the leader: its list now comes from a
		// follower, which does not know the fourth member.
		st, err := etcd.Status(ctx, urls[0])
		if err != nil {
			t.Fatal(err)
		}
		var leader string
		for name, id := range before {
			if id == st.Leader {
				leader = name
			}
		}
		if !slices.Contains(names, leader) {
			t.Fatalf("leader %x is %q, want one of the first three (members %v)", st.Leader, leader, before)
		}
		etcd.partition(addr.ClientURL(leader), true)
		t.Cleanup(func() { etcd.partition(addr.ClientURL(leader), false) })
		// A steady cluster is probed every 30 s: an annotation brings the
		// next pass now.
		testenv.Eventually(t, "the annotation", func(ctx context.Context) error {
			got, err := get(ctx, c)
			if err != nil {
				return err
			}
			metav1.SetMetaDataAnnotation(&got.ObjectMeta, "test/poke", "1")
			return suite.Client.Update(ctx, got)
		})
		// The pass lists from a lagging follower once; the next goes to the
		// followers it found healthy, through raft.
		testenv.Eventually(t, "a list from a lagging copy", func(context.Context) error {
			if etcd.stale() == 0 {
				return errors.New("no list answered from a lagging copy yet")
			}
			return nil
		})
		all := append(slices.Clone(names), "example-etcd-cluster-3")
		var volumes []string
		for _, n := range all {
			volumes = append(volumes, volumeName(n))
		}
		testenv.Consistently(t, 3*time.Second, "the fourth member kept", func(ctx context.Context) error {
			if p, v := children(ctx, t, c); !slices.Equal(p, all) || !slices.Equal(v, volumes) {
				return fmt.Errorf("pods %v, volumes %v", p, v)
			}
			return nil
		})

		etcd.partition(addr.ClientURL(leader), false)
		etcd.catchUp()
		waitHealthy(t, c, 4)
		if after := memberIDs(t, c); !maps.Equal(before, after) {
			t.Errorf("members %v became %v", before, after)
		}
	})
}

// etcd answers before the kubelet's first readiness probe: Ready waits for
// the pods, so that `kubectl get pods` right after `kubectl wait
// --for=condition=Ready` shows them ready (lab 6 saw 0/1 there).
func TestReadyWaitsForThePodsReadiness(t *testing.T) {
	ns := suite.Namespace(t, nil)
	k := startKubelet(t, suite.Client, ns)
	c := workshopCluster(ns)
	c.Spec.Size = 1
	member := c.Name + "-0"
	k.probeLate(member)
	create(t, c)
	testenv.Eventually(t, "Available, and not Ready for the pod's readiness", func(ctx context.Context) error {
		got, err := get(ctx, c)
		if err != nil {
			return err
		}
		ready := meta.FindStatusCondition(got.Status.Conditions, conditions.Ready)
		switch {
		case !conditions.IsTrue(got.Status.Conditions, Available):
			return fmt.Errorf("not Available: %+v", got.Status.Conditions)
		case ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != ReasonPodsNotReady || !strings.Contains(ready.Message, member):
			return fmt.Errorf("Ready %+v, want False %s naming %s", ready, ReasonPodsNotReady, member)
		}
		return nil
	})
	k.probeNow(member)
	waitHealthy(t, c, 1)
}

// An even size is allowed, with a Warning when it is asked for: one per
// spec change, not one per pass.
func TestEvenSizeIsWarned(t *testing.T) {
	ns := suite.Namespace(t, nil)
	c := workshopCluster(ns)
	c.Spec.Size = 4
	create(t, c)
	// By the time the four first members exist, the cluster has been
	// reconciled several times.
	testenv.Eventually(t, "four member pods and the EvenSize warning", func(ctx context.Context) error {
		pods, _ := children(ctx, t, c)
		if n := warnings(t, c)["EvenSize"]; len(pods) != 4 || n == 0 {
			return fmt.Errorf("pods %v, %d EvenSize warnings", pods, n)
		}
		return nil
	})
	if n := warnings(t, c)["EvenSize"]; n != 1 {
		t.Errorf("%d EvenSize warnings, want 1 for one spec", n)
	}
}

func TestBootstrapWithoutNodesAndScope(t *testing.T) {
	ns := suite.Namespace(t, nil)
	c := workshopCluster(ns)
	create(t, c)
	other := workshopCluster(ns)
	other.Name = "clusterwide"
	other.Annotations = map[string]string{etcdv1.ScopeAnnotation: etcdv1.ScopeClusterWide}
	create(t, other)

	testenv.Eventually(t, "the first members", func(ctx context.Context) error {
		got, err := get(ctx, c)
		if err != nil {
			return err
		}
		pods, volumes := children(ctx, t, c)
		want := []string{"example-etcd-cluster-0", "example-etcd-cluster-1", "example-etcd-cluster-2"}
		if !slices.Equal(pods, want) || len(volumes) != 3 {
			return fmt.Errorf("pods %v, volumes %v", pods, volumes)
		}
		if got.Status.Phase != etcdv1.PhaseCreating || !slices.Equal(got.Status.Members.Unready, want) {
			return fmt.Errorf("status %+v", got.Status)
		}
		return nil
	})
	pod := &corev1.Pod{}
	if err := suite.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "example-etcd-cluster-2"}, pod); err != nil {
		t.Fatal(err)
	}
	args := strings.Join(pod.Spec.Containers[0].Args, " ")
	for _, want := range []string{"--initial-cluster-state=new", "--name=example-etcd-cluster-2", "example-etcd-cluster-0=http://"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}

	got, err := get(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	pods, _ := children(context.Background(), t, other)
	if len(pods) != 0 || got.Status.Phase != "" {
		t.Errorf("the cluster-wide cluster got pods %v, status %+v", pods, got.Status)
	}
}

// An object with the name of one of the cluster's children that the
// operator did not create is never taken over: the cluster says
// NameConflict, the object stays as it was, and once it goes the cluster
// proceeds.
func TestNeverAdoptsAStranger(t *testing.T) {
	strangers := []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "example-etcd-cluster"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "example-etcd-cluster-client"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "example-etcd-cluster-0"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "someone-elses"}}}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: volumeName("example-etcd-cluster-0")},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: defaultVolumeSize}}}},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "example-etcd-cluster"},
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt(0)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}}},
	}
	for _, stranger := range strangers {
		t.Run(stranger.GetName(), func(t *testing.T) {
			ctx := context.Background()
			ns := suite.Namespace(t, nil)
			stranger.SetNamespace(ns)
			if err := suite.Client.Create(ctx, stranger); err != nil {
				t.Fatal(err)
			}
			version := stranger.GetResourceVersion()
			c := workshopCluster(ns)
			create(t, c)
			var got *etcdv1.EtcdCluster
			testenv.Eventually(t, "Degraded NameConflict", func(ctx context.Context) error {
				var err error
				if got, err = get(ctx, c); err != nil {
					return err
				}
				d := meta.FindStatusCondition(got.Status.Conditions, conditions.Degraded)
				if d == nil || d.Status != metav1.ConditionTrue || d.Reason != ReasonNameConflict || !strings.Contains(d.Message, stranger.GetName()) {
					return fmt.Errorf("conditions %+v", got.Status.Conditions)
				}
				return nil
			})
			testenv.Reported(t, suite.Client, got, got.Status.Conditions, ReasonNameConflict)
			now := stranger.DeepCopyObject().(client.Object)
			if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(stranger), now); err != nil {
				t.Fatal(err)
			}
			if now.GetResourceVersion() != version || len(now.GetOwnerReferences()) != 0 {
				t.Errorf("the stranger's object was changed: owners %v", now.GetOwnerReferences())
			}
			if len(now.GetFinalizers()) > 0 {
				// The volume's pvc-protection finalizer: envtest runs no
				// controller that would remove it once nothing uses it.
				patch := client.MergeFrom(now.DeepCopyObject().(client.Object))
				now.SetFinalizers(nil)
				if err := suite.Client.Patch(ctx, now, patch); err != nil {
					t.Fatal(err)
				}
			}
			if err := suite.Client.Delete(ctx, now, client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, "the cluster's own "+stranger.GetName(), func(ctx context.Context) error {
				own := stranger.DeepCopyObject().(client.Object)
				if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(stranger), own); err != nil {
					return err
				}
				got, err := get(ctx, c)
				if err != nil {
					return err
				}
				if !metav1.IsControlledBy(own, got) {
					return fmt.Errorf("%s is not the cluster's yet", own.GetName())
				}
				return nil
			})
		})
	}
}
