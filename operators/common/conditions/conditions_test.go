package conditions

import (
	"testing"
	"time"

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
