package controller

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/testenv"
	gordonv1 "github.com/operator-workshops/workshop/operators/gordon/api/v1"
	"github.com/operator-workshops/workshop/operators/gordon/internal/replicas"
)

// TestStatusOfEachPass maps what a pass planned and found of a Gordon of 3
// to Ready, Progressing and Degraded. The expectations are written from what
// the conditions mean (Ready: N pods serve; Progressing: the operator or the
// kubelet works on by itself; Degraded: a person should look), and each row
// starts from a Gordon that was ready, so nothing of that stays.
func TestStatusOfEachPass(t *testing.T) {
	pod := func(name string, ready bool, waiting string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		if waiting != "" {
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "gordon", State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: waiting, Message: "the kubelet says so"}}}}
		}
		return p
	}
	ready3 := []*corev1.Pod{pod("a", true, ""), pod("b", true, ""), pod("c", true, "")}
	tests := []struct {
		name string
		plan replicas.Plan
		err  error
		want string
	}{
		{"three ready", replicas.Plan{Keep: ready3}, nil,
			"Ready=True/AllPodsReady Progressing=False/UpToDate Degraded=False/NoProblem"},
		{"scaling up", replicas.Plan{Keep: ready3[:2], Create: 1}, nil,
			"Ready=False/Scaling Progressing=True/Scaling Degraded=False/NoProblem"},
		{"a pod starting", replicas.Plan{Keep: []*corev1.Pod{pod("a", true, ""), pod("b", true, ""), pod("c", false, "")}}, nil,
			"Ready=False/WaitingForPods Progressing=True/WaitingForPods Degraded=False/NoProblem"},
		{"an image that never pulls", replicas.Plan{Keep: []*corev1.Pod{pod("a", true, ""), pod("b", true, ""), pod("c", false, "ImagePullBackOff")}}, nil,
			"Ready=False/ImagePullBackOff Progressing=False/ImagePullBackOff Degraded=True/ImagePullBackOff"},
		{"scaling while a pod cannot run", replicas.Plan{Keep: []*corev1.Pod{pod("a", false, "ImagePullBackOff")}, Create: 2}, nil,
			"Ready=False/Scaling Progressing=True/Scaling Degraded=True/ImagePullBackOff"},
		{"pods refused", replicas.Plan{Keep: ready3[:1], Create: 2}, conditions.Block("Forbidden", "exceeded quota"),
			"Ready=False/Forbidden Progressing=False/Forbidden Degraded=True/Forbidden"},
		{"a create failed", replicas.Plan{Keep: ready3[:1], Create: 2}, errors.New("connection refused"),
			"Ready=False/CreateFailed Progressing=True/CreateFailed Degraded=False/NoProblem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &gordonv1.Gordon{ObjectMeta: metav1.ObjectMeta{Name: "g", Generation: 1}}
			g.Spec.Gordon.Replicas = 3
			summarize(g, &replicas.Plan{Keep: ready3}, nil)
			summarize(g, &tt.plan, tt.err)
			if got := testenv.Triple(g.Status.Conditions); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
