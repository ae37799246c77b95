package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// The Blocked warning is recorded when the cause changes: blockedBy reads
// back the cause report wrote, and nothing once the block is gone.
func TestBlockedByReadsWhatReportWrote(t *testing.T) {
	c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "example", Namespace: "etc"}}
	if got := blockedBy(c); got != "" {
		t.Errorf("a new cluster is blocked by %q", got)
	}
	report(c, nil, observed{}, membership.Step{Action: membership.Blocked, Cause: membership.QuorumLost, Reason: "2 of 3 members down"})
	if got := blockedBy(c); got != membership.QuorumLost {
		t.Errorf("after a Blocked step: blocked by %q, want %q", got, membership.QuorumLost)
	}
	report(c, nil, observed{}, membership.Step{Action: membership.None, Reason: "nothing to do"})
	if got := blockedBy(c); got != "" {
		t.Errorf("after the block is gone: blocked by %q", got)
	}
}
