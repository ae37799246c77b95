package controller

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	etcdv1 "github.com/operator-workshops/workshop/operators/etcd-cluster/api/v1beta2"
	"github.com/operator-workshops/workshop/operators/etcd-cluster/internal/membership"
)

func TestMemberPodMountsNoToken(t *testing.T) {
	c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "example", Namespace: "etc"}}
	pod := podFor(c, "example-0", start{initialCluster: "example-0=http://example-0.example.etc.svc:2380"}, DefaultRequests)
	if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Error("a member pod mounts a ServiceAccount token it never uses: automountServiceAccountToken is not false")
	}
	if sc := pod.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("a member pod may run as root: %+v", sc)
	}
}

// The cache keeps of a member's pod what a pass reads of it (trimPod): the
// members it bootstrapped with and the image it runs read the same.
func TestTrimmedPodReadsTheSame(t *testing.T) {
	c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "example", Namespace: "etc"}, Spec: etcdv1.ClusterSpec{Size: 3}}
	how := start{initialCluster: "example-0=http://example-0.example.etc.svc:2380,example-1=http://example-1.example.etc.svc:2380"}
	whole := podFor(c, "example-0", how, DefaultRequests)
	whole.Spec.NodeName = "node-1"
	trimmed := whole.DeepCopy()
	trimPod(trimmed)
	if len(trimmed.Spec.Volumes) != 0 || trimmed.Spec.Containers[0].Resources.Requests != nil || trimmed.Spec.Containers[0].ReadinessProbe != nil {
		t.Errorf("trimPod left the pod's volumes, resources or probes: %+v", trimmed.Spec)
	}
	if trimmed.Spec.NodeName != "node-1" || trimmed.Spec.Containers[0].Image != whole.Spec.Containers[0].Image || !equality.Semantic.DeepEqual(trimmed.ObjectMeta, whole.ObjectMeta) {
		t.Errorf("trimPod dropped the pod's node, image or labels: %+v", trimmed)
	}
	got := bootstrapMembers(c, observed{pods: map[string]*corev1.Pod{"example-0": trimmed}})
	want := bootstrapMembers(c, observed{pods: map[string]*corev1.Pod{"example-0": whole}})
	if strings.Join(got, ",") != strings.Join(want, ",") || len(got) != 2 {
		t.Errorf("the trimmed pod bootstrapped %v; the whole one %v", got, want)
	}
}

// A member requests the operator's CPU and memory, unless its cluster's pod
// policy names resources of its own (as the coreos operator's did), which
// then replace them whole.
func TestMemberRequests(t *testing.T) {
	c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "example", Namespace: "etc"}}
	how := start{initialCluster: "example-0=http://example-0.example.etc.svc:2380"}
	got := podFor(c, "example-0", how, DefaultRequests).Spec.Containers[0].Resources
	if !got.Requests.Cpu().Equal(DefaultRequests.CPU) || !got.Requests.Memory().Equal(DefaultRequests.Memory) || got.Limits != nil {
		t.Errorf("resources %+v, want the operator's requests %v", got, DefaultRequests.List())
	}
	// A pod policy without resources keeps the operator's.
	c.Spec.Pod = &etcdv1.PodPolicy{NodeSelector: map[string]string{"disk": "ssd"}}
	if got := podFor(c, "example-0", how, DefaultRequests).Spec.Containers[0].Resources; !got.Requests.Cpu().Equal(DefaultRequests.CPU) {
		t.Errorf("a pod policy without resources: %+v", got)
	}
	own := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
	c.Spec.Pod.Resources = own
	if got := podFor(c, "example-0", how, DefaultRequests).Spec.Containers[0].Resources; !equality.Semantic.DeepEqual(got, own) {
		t.Errorf("resources %+v, want the cluster's own %+v", got, own)
	}
}

// twoOfThreeHealthy is a cluster of version whose third member,
// example-2, is not healthy.
func twoOfThreeHealthy(version string) (*etcdv1.EtcdCluster, []membership.Member) {
	c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "example", Namespace: "etc"}, Spec: etcdv1.ClusterSpec{Size: 3, Version: version}}
	return c, []membership.Member{
		{ID: 1, Name: "example-0", Healthy: true},
		{ID: 2, Name: "example-1", Healthy: true},
		{ID: 3, Name: "example-2"},
	}
}

// A member coming back (its pod restarted by a roll, recreated on its
// volume) is the operator's to finish, not Degraded: a Warning on every
// roll step would cry wolf. Not Ready for memberGrace, it is.
func TestMemberComingBackIsDegradedOnlyAfterGrace(t *testing.T) {
	c, members := twoOfThreeHealthy("3.5.0")
	restarted := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "example-2", Namespace: "etc", CreationTimestamp: metav1.NewTime(restarted)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "quay.io/coreos/etcd:v3.5.0"}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(restarted)},
		}},
	}
	obs := observed{pods: map[string]*corev1.Pod{"example-2": pod}}
	wait := membership.Step{Action: membership.Wait, Cause: membership.MemberUnhealthy, Reason: "example-2 is not healthy"}
	for _, tc := range []struct {
		after  time.Duration
		status metav1.ConditionStatus
		reason string
	}{
		{10 * time.Second, metav1.ConditionFalse, conditions.ReasonNoProblem},
		{memberGrace + time.Second, metav1.ConditionTrue, ReasonMemberFailed},
	} {
		summarizeAt(c, pass{planned: true, members: members, obs: obs, step: wait}, nil, restarted.Add(tc.after))
		d := meta.FindStatusCondition(c.Status.Conditions, conditions.Degraded)
		if d == nil || d.Status != tc.status || d.Reason != tc.reason {
			t.Errorf("not Ready for %s: Degraded %+v, want %s %s", tc.after, d, tc.status, tc.reason)
		}
		// Whether Degraded or not, what is under way names the member.
		if p := meta.FindStatusCondition(c.Status.Conditions, conditions.Progressing); p == nil || p.Status != metav1.ConditionTrue || !strings.Contains(p.Message, "example-2") {
			t.Errorf("not Ready for %s: Progressing %+v, want True naming example-2", tc.after, p)
		}
	}
}

// A member whose pod waits on an image that never pulls (a version with no
// release, a repository typo) is Degraded with the kubelet's reason and
// message, not only "not healthy".
func TestStuckMemberSaysWhatTheKubeletSays(t *testing.T) {
	c, members := twoOfThreeHealthy("3.6.99")
	stuck := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "example-2", Namespace: "etc"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "quay.io/coreos/etcd:v3.6.99"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "etcd", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "quay.io/coreos/etcd:v3.6.99"`},
		}}}},
	}
	summarize(c, pass{planned: true, members: members, obs: observed{pods: map[string]*corev1.Pod{"example-2": stuck}},
		step: membership.Step{Action: membership.None, Reason: "nothing to do"}}, nil)
	d := meta.FindStatusCondition(c.Status.Conditions, conditions.Degraded)
	if d == nil || d.Status != metav1.ConditionTrue || d.Reason != "ImagePullBackOff" ||
		!strings.Contains(d.Message, `container etcd of pod example-2: ImagePullBackOff: Back-off pulling image "quay.io/coreos/etcd:v3.6.99"`) {
		t.Errorf("Degraded %+v: want the kubelet's ImagePullBackOff and its message", d)
	}
}
