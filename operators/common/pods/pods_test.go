package pods

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func waiting(name, reason, message string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message},
	}}
}

func TestStuck(t *testing.T) {
	crashing := waiting("db", "CrashLoopBackOff", "back-off 40s restarting failed container")
	crashing.RestartCount = 4
	crashing.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1}
	tests := []struct {
		name       string
		init, main []corev1.ContainerStatus
		reason     string
		message    string
	}{
		{"a new pod", nil, nil, "", ""},
		{"creating its container", nil, []corev1.ContainerStatus{waiting("db", "ContainerCreating", "")}, "", ""},
		{"pulling, first try", nil, []corev1.ContainerStatus{waiting("db", "ErrImagePull", "not found")}, "ErrImagePull", "container db of pod p: ErrImagePull: not found"},
		{"pulling, backing off", nil, []corev1.ContainerStatus{waiting("db", "ImagePullBackOff", `Back-off pulling image "mysql:9.9"`)}, "ImagePullBackOff", `Back-off pulling image "mysql:9.9"`},
		{"a missing Secret key", nil, []corev1.ContainerStatus{waiting("db", "CreateContainerConfigError", `couldn't find key password in Secret ns/s`)}, "CreateContainerConfigError", "couldn't find key password"},
		{"crash looping", nil, []corev1.ContainerStatus{crashing}, "CrashLoopBackOff", "(last exit code 1, 4 restarts)"},
		{"an init container first", []corev1.ContainerStatus{waiting("init", "InvalidImageName", "")}, []corev1.ContainerStatus{waiting("db", "PodInitializing", "")}, "InvalidImageName", "container init of pod p: InvalidImageName"},
		{"running", nil, []corev1.ContainerStatus{{Name: "db", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
			pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses = tt.init, tt.main
			reason, message, stuck := Stuck(pod)
			if stuck != (tt.reason != "") || reason != tt.reason || !strings.Contains(message, tt.message) {
				t.Errorf("Stuck = %q, %q, %v; want %q and a message containing %q", reason, message, stuck, tt.reason, tt.message)
			}
		})
	}
}

func TestReadyAndEnded(t *testing.T) {
	pod := &corev1.Pod{}
	if Ready(pod) || Ended(pod) {
		t.Error("a pod without status is ready or ended")
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if !Ready(pod) {
		t.Error("a pod whose Ready condition is true is not ready")
	}
	for _, phase := range []corev1.PodPhase{corev1.PodSucceeded, corev1.PodFailed} {
		pod.Status.Phase = phase
		if !Ended(pod) {
			t.Errorf("a %s pod has not ended", phase)
		}
	}
}

func TestNeverRan(t *testing.T) {
	pull := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("etcd", "ImagePullBackOff", "")}}}
	if !NeverRan(pull) {
		t.Error("a pod waiting on its image ran")
	}
	crash := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("etcd", "CrashLoopBackOff", "")}}}
	if NeverRan(crash) {
		t.Error("a crash-looping pod never ran")
	}
	// Its image gone since (a tag moved): it ran before.
	pull.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0}
	if NeverRan(pull) {
		t.Error("a pod that ran once, now waiting on its image, never ran")
	}
}

// KeepStatus leaves what this package reads: each of its answers is the
// same for the trimmed pod as for the whole one.
func TestKeepStatus(t *testing.T) {
	crashing := waiting("db", "CrashLoopBackOff", "back-off")
	crashing.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1}
	for _, status := range []corev1.PodStatus{
		{},
		{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{waiting("db", "ImagePullBackOff", "not found")}},
		{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{crashing}},
		{Phase: corev1.PodRunning, PodIP: "10.0.0.7", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		{Phase: corev1.PodSucceeded},
	} {
		whole := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "db"}},
			Spec: corev1.PodSpec{
				NodeName:   "node-1",
				Containers: []corev1.Container{{Name: "db", Image: "mysql:8.0", Args: []string{"--port=3306"}}},
				Volumes:    []corev1.Volume{{Name: "data"}},
			},
			Status: status,
		}
		trimmed := whole.DeepCopy()
		KeepStatus(trimmed)
		if len(trimmed.Spec.Containers) != 0 || len(trimmed.Spec.Volumes) != 0 || trimmed.Spec.NodeName != "node-1" {
			t.Fatalf("KeepStatus left the spec %+v; want only its node", trimmed.Spec)
		}
		if trimmed.Labels["app"] != "db" || trimmed.Status.Phase != status.Phase {
			t.Fatalf("KeepStatus changed the metadata or status: %+v", trimmed)
		}
		r1, m1, s1 := Stuck(whole)
		r2, m2, s2 := Stuck(trimmed)
		if r1 != r2 || m1 != m2 || s1 != s2 || Ready(whole) != Ready(trimmed) || Ended(whole) != Ended(trimmed) ||
			NeverRan(whole) != NeverRan(trimmed) || Condition(whole, corev1.ContainersReady) != Condition(trimmed, corev1.ContainersReady) {
			t.Errorf("a pod of status %+v reads differently once trimmed", status)
		}
	}
}

// NotReadySince answers for a running pod that is not ready, with when its
// Ready condition went False, and for no other pod.
func TestNotReadySince(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
	pod := func(phase corev1.PodPhase, ready corev1.ConditionStatus) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: phase,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: at}}}}
	}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"running, not ready", pod(corev1.PodRunning, corev1.ConditionFalse), true},
		{"running, ready", pod(corev1.PodRunning, corev1.ConditionTrue), false},
		{"pending", pod(corev1.PodPending, corev1.ConditionFalse), false},
		{"no Ready condition", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, false},
	} {
		since, ok := NotReadySince(c.pod)
		if ok != c.want || ok && !since.Equal(at.Time) {
			t.Errorf("%s: NotReadySince = %v, %v; want %v since %v", c.name, since, ok, c.want, at)
		}
	}
}
