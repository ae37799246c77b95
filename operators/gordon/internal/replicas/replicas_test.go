package replicas

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type podOpt func(*corev1.Pod)

func pod(name string, age time.Duration, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name:              name,
		CreationTimestamp: metav1.NewTime(time.Unix(1_000_000, 0).Add(-age)),
	}}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
func failed(p *corev1.Pod)   { p.Status.Phase = corev1.PodFailed }
func succeeded(p *corev1.Pod) {
	p.Status.Phase = corev1.PodSucceeded
}
func terminating(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name       string
		pods       []*corev1.Pod
		desired    int
		wantCreate int
		wantDelete []string
		wantKeep   []string
	}{
		{name: "nothing yet", desired: 3, wantCreate: 3, wantDelete: []string{}, wantKeep: []string{}},
		// The workshop's loop `i = 1; while i <= replicas` made 4 pods for 3.
		{name: "exactly three, not four", pods: []*corev1.Pod{pod("a", 3), pod("b", 2), pod("c", 1)}, desired: 3,
			wantDelete: []string{}, wantKeep: []string{"a", "b", "c"}},
		{name: "zero replicas", pods: []*corev1.Pod{pod("a", 1)}, desired: 0,
			wantDelete: []string{"a"}, wantKeep: []string{}},
		{name: "scale up", pods: []*corev1.Pod{pod("a", 1)}, desired: 5, wantCreate: 4,
			wantDelete: []string{}, wantKeep: []string{"a"}},
		{name: "scale down removes the newest", pods: []*corev1.Pod{pod("old", 9), pod("new", 1), pod("mid", 5)}, desired: 1,
			wantDelete: []string{"new", "mid"}, wantKeep: []string{"old"}},
		{name: "scale down removes not ready first", pods: []*corev1.Pod{pod("old", 9, notReady), pod("new", 1), pod("mid", 5)}, desired: 2,
			wantDelete: []string{"old"}, wantKeep: []string{"new", "mid"}},
		{name: "failed and succeeded pods are replaced", pods: []*corev1.Pod{pod("a", 3, failed), pod("b", 2, succeeded), pod("c", 1)}, desired: 3,
			wantCreate: 2, wantDelete: []string{"a", "b"}, wantKeep: []string{"c"}},
		{name: "terminating pods do not count and are left alone", pods: []*corev1.Pod{pod("a", 3, terminating), pod("b", 2)}, desired: 2,
			wantCreate: 1, wantDelete: []string{}, wantKeep: []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Compute(tt.pods, tt.desired)
			if p.Create != tt.wantCreate || !reflect.DeepEqual(names(p.Delete), tt.wantDelete) || !reflect.DeepEqual(names(p.Keep), tt.wantKeep) {
				t.Errorf("Compute = create %d, delete %v, keep %v; want create %d, delete %v, keep %v",
					p.Create, names(p.Delete), names(p.Keep), tt.wantCreate, tt.wantDelete, tt.wantKeep)
			}
			if got := len(p.Keep) + p.Create; got != tt.desired {
				t.Errorf("the plan ends with %d pods, want %d", got, tt.desired)
			}
		})
	}
}

func TestVictims(t *testing.T) {
	same := 4 * time.Second
	tests := []struct {
		name string
		pods []*corev1.Pod
		n    int
		want []string
	}{
		{"newest first", []*corev1.Pod{pod("a", 3), pod("b", 1), pod("c", 2)}, 2, []string{"b", "c"}},
		{"not ready before newer ready", []*corev1.Pod{pod("a", 3, notReady), pod("b", 1)}, 1, []string{"a"}},
		{"names break ties", []*corev1.Pod{pod("x", same), pod("y", same)}, 1, []string{"y"}},
		{"more than there are", []*corev1.Pod{pod("a", 1)}, 3, []string{"a"}},
		{"none", []*corev1.Pod{pod("a", 1)}, 0, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(Victims(tt.pods, tt.n)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Victims = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBatches(t *testing.T) {
	tests := []struct {
		n    int
		want []int
	}{
		{0, nil}, {1, []int{1}}, {3, []int{1, 2}}, {4, []int{1, 2, 1}}, {10, []int{1, 2, 4, 3}},
	}
	for _, tt := range tests {
		if got := Batches(tt.n); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Batches(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
}
