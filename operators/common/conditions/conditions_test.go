package conditions

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

func TestToldDegraded(t *testing.T) {
	var healthy, pulling, pullingAgain, crashing []metav1.Condition
	Set(&healthy, 1, Degraded, metav1.ConditionFalse, "Reconciled", "no problem found")
	Set(&pulling, 1, Degraded, metav1.ConditionTrue, "ImagePullBackOff", "back-off pulling image")
	Set(&pullingAgain, 1, Degraded, metav1.ConditionTrue, "ImagePullBackOff", "back-off pulling image, again")
	Set(&crashing, 1, Degraded, metav1.ConditionTrue, "CrashLoopBackOff", "back-off restarting")
	// Passes of one object, in order; before is what each pass read, which
	// may lag behind what the previous pass wrote.
	passes := []struct {
		name          string
		before, after []metav1.Condition
		tell          bool
	}{
		{"healthy", healthy, healthy, false},
		{"first problem", healthy, pulling, true},
		{"the same problem, read from a stale cache", healthy, pulling, false},
		{"the same problem, another message", pulling, pullingAgain, false},
		{"another problem", pulling, crashing, true},
		{"fixed", crashing, healthy, false},
		{"a problem again", healthy, pulling, true},
	}
	obj := &metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "uid-1"}
	var told Told
	for _, p := range passes {
		d, tell := told.Degraded(obj, p.before, p.after)
		if tell != p.tell || (tell && d.Reason != meta.FindStatusCondition(p.after, Degraded).Reason) {
			t.Errorf("%s: Degraded = %+v, %v; want %v", p.name, d, tell, p.tell)
		}
	}
	// A new object of the same name is another object.
	again := &metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "uid-2"}
	if _, tell := told.Degraded(again, healthy, pulling); !tell {
		t.Error("a new object of a name whose old object was told a problem is not told its own")
	}
	// Once the object is gone, nothing of it is remembered: the same
	// problem, read as new, is told again.
	told.Forget(types.NamespacedName{Namespace: "ns", Name: "db"})
	if len(told.reasons) != 0 {
		t.Errorf("after Forget: %v remembered", told.reasons)
	}
	// A new process (an operator restarted) trusts the status it reads.
	var restarted Told
	if _, tell := restarted.Degraded(obj, pulling, pullingAgain); tell {
		t.Error("after a restart, a problem the status already says is told again")
	}
	other := &metav1.ObjectMeta{Namespace: "ns", Name: "other", UID: "uid-3"}
	if _, tell := restarted.Degraded(other, healthy, crashing); !tell {
		t.Error("after a restart, a new problem of another object is not told")
	}
	// A Degraded that is False told nothing, whatever its reason says.
	var cleared []metav1.Condition
	Set(&cleared, 1, Degraded, metav1.ConditionFalse, "ImagePullBackOff", "pulled at last")
	third := &metav1.ObjectMeta{Namespace: "ns", Name: "third", UID: "uid-4"}
	if _, tell := restarted.Degraded(third, cleared, pulling); !tell {
		t.Error("after a restart, a problem whose reason a False Degraded names is not told")
	}
}

// An outcome (a Job's, by its UID) is told once per object, whatever
// Degraded does meanwhile; a new object of the same name, and one
// forgotten, start afresh.
func TestToldOnce(t *testing.T) {
	var told Told
	obj := &metav1.ObjectMeta{Namespace: "ns", Name: "m", UID: "first"}
	if !told.Once(obj, "restore") || told.Once(obj, "restore") {
		t.Error("the restore's outcome is not told exactly once")
	}
	if !told.Once(obj, "backup") {
		t.Error("the backup's outcome is not told after the restore's")
	}
	told.Degraded(obj, nil, nil) // Degraded False: the next problem is told again, not the outcomes
	if told.Once(obj, "restore") {
		t.Error("the restore's outcome is told again once Degraded is False")
	}
	again := &metav1.ObjectMeta{Namespace: "ns", Name: "m", UID: "second"}
	if !told.Once(again, "restore") {
		t.Error("the restore of a new object of the same name is not told")
	}
	told.Forget(types.NamespacedName{Namespace: "ns", Name: "m"})
	if len(told.once) != 0 || !told.Once(again, "restore") {
		t.Errorf("after the object is gone: %v remembered", told.once)
	}
}

func TestReportedAndUnreported(t *testing.T) {
	blocked := Block("SecretNotFound", "Secret %q not found", "s")
	waiting := Wait("Restoring", "restore-job runs")
	failed := errors.New("connection refused")
	for _, tt := range []struct {
		name        string
		err         error
		reason      string
		blocked, ok bool
		unreported  error
	}{
		{"nil", nil, "", false, false, nil},
		{"blocked", blocked, "SecretNotFound", true, true, nil},
		{"wrapped waiting", fmt.Errorf("pass: %w", waiting), "Restoring", false, true, nil},
		{"a failed call", failed, "", false, false, failed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reason, _, blocked, ok := Reported(tt.err)
			if reason != tt.reason || blocked != tt.blocked || ok != tt.ok {
				t.Errorf("Reported = %q, blocked %v, ok %v; want %q, %v, %v", reason, blocked, ok, tt.reason, tt.blocked, tt.ok)
			}
			if got := Unreported(tt.err); !errors.Is(got, tt.unreported) || (got == nil) != (tt.unreported == nil) {
				t.Errorf("Unreported = %v, want %v", got, tt.unreported)
			}
		})
	}
	// Joined to a failed call, a reported error still lets the failure be
	// retried.
	if got := Unreported(errors.Join(failed, waiting)); !errors.Is(got, failed) || errors.As(got, new(*Waiting)) {
		t.Errorf("Unreported(failed + waiting) = %v, want the failure alone", got)
	}
	if got := Unreported(errors.Join(blocked, waiting)); got != nil {
		t.Errorf("Unreported(blocked + waiting) = %v, want nil", got)
	}
}

func TestNameConflict(t *testing.T) {
	reason, msg, blocked, ok := Reported(NameConflict("Service", "db", "Database", "db"))
	if !ok || !blocked || reason != ReasonNameConflict {
		t.Fatalf("reported %v, blocked %v, reason %q", ok, blocked, reason)
	}
	want := `Service "db" exists and does not belong to Database "db": the operator never takes over an object it did not create. ` +
		"Delete or rename the Service, or give the Database another name"
	if msg != want {
		t.Errorf("message\n got %s\nwant %s", msg, want)
	}
}

// Stamp marks every condition but those it is told to leave.
func TestStamp(t *testing.T) {
	conds := []metav1.Condition{{Type: Ready, ObservedGeneration: 1}, {Type: Degraded, ObservedGeneration: 1}}
	Stamp(conds, 2, Degraded)
	if conds[0].ObservedGeneration != 2 || conds[1].ObservedGeneration != 1 {
		t.Errorf("Ready describes generation %d, Degraded %d; want 2 and 1", conds[0].ObservedGeneration, conds[1].ObservedGeneration)
	}
}
