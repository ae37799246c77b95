package conditions

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSet(t *testing.T) {
	var conds []metav1.Condition
	if !Set(&conds, 1, Ready, metav1.ConditionFalse, "PodPending", "waiting for pod %q", "db") {
		t.Fatal("first Set reported no change")
	}
	first := conds[0]
	if first.Message != `waiting for pod "db"` || first.ObservedGeneration != 1 {
		t.Fatalf("unexpected condition %+v", first)
	}
	// The same condition again changes nothing, not even the transition time.
	conds[0].LastTransitionTime = metav1.NewTime(time.Unix(1, 0))
	if Set(&conds, 1, Ready, metav1.ConditionFalse, "PodPending", "waiting for pod %q", "db") {
		t.Error("identical Set reported a change")
	}
	if Set(&conds, 1, Ready, metav1.ConditionTrue, "Running", "ok"); IsTrue(conds, Ready) != true {
		t.Error("Ready not true after setting it true")
	}
	if conds[0].LastTransitionTime.Unix() == 1 {
		t.Error("LastTransitionTime did not move on a status change")
	}
	if IsTrue(conds, Degraded) {
		t.Error("absent condition reported true")
	}
}

func TestNewlyDegraded(t *testing.T) {
	var healthy, pulling, pullingAgain, crashing []metav1.Condition
	Set(&healthy, 1, Degraded, metav1.ConditionFalse, "Reconciled", "no problem found")
	Set(&pulling, 1, Degraded, metav1.ConditionTrue, "ImagePullBackOff", "back-off pulling image")
	Set(&pullingAgain, 1, Degraded, metav1.ConditionTrue, "ImagePullBackOff", "back-off pulling image, again")
	Set(&crashing, 1, Degraded, metav1.ConditionTrue, "CrashLoopBackOff", "back-off restarting")
	tests := []struct {
		name          string
		before, after []metav1.Condition
		tell          bool
	}{
		{"healthy", healthy, healthy, false},
		{"first problem", nil, pulling, true},
		{"problem after health", healthy, pulling, true},
		{"the same problem, another message", pulling, pullingAgain, false},
		{"another problem", pulling, crashing, true},
		{"fixed", crashing, healthy, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, tell := NewlyDegraded(tt.before, tt.after)
			if tell != tt.tell || (tell && d.Reason != meta.FindStatusCondition(tt.after, Degraded).Reason) {
				t.Errorf("NewlyDegraded = %+v, %v; want %v", d, tell, tt.tell)
			}
		})
	}
}
