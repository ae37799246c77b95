package conditions

import (
	"errors"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// triple is Ready, Progressing and Degraded as "Status/Reason/Message".
type triple [3]string

func (tr triple) String() string {
	return fmt.Sprintf("Ready %s, Progressing %s, Degraded %s", tr[0], tr[1], tr[2])
}

func tripleOf(conds []metav1.Condition) triple {
	var tr triple
	for i, typ := range []string{Ready, Progressing, Degraded} {
		if c := meta.FindStatusCondition(conds, typ); c != nil {
			tr[i] = fmt.Sprintf("%s/%s/%s", c.Status, c.Reason, c.Message)
		}
	}
	return tr
}

func TestSummarize(t *testing.T) {
	serving := Report{"Running", "serves on port 30000"}
	starting := Report{"PodPending", "creating the pod"}
	stuck := Report{"ImagePullBackOff", "the image cannot be pulled"}
	const (
		upToDate  = "False/UpToDate/up to date"
		noProblem = "False/NoProblem/no problem found"
		waiting   = "waiting for a person to act: see Degraded"
	)
	tests := []struct {
		name string
		o    Observed
		want triple
	}{
		// The expected triples are written from what each condition means
		// (package doc): Ready, the spec serves; Progressing, the operator
		// works on by itself; Degraded, a person should look.
		{"ready", Observed{Ready: true, Report: serving},
			triple{"True/Running/serves on port 30000", upToDate, noProblem}},
		{"working", Observed{Report: starting},
			triple{"False/PodPending/creating the pod", "True/PodPending/creating the pod", noProblem}},
		{"ready while a Job runs", Observed{Ready: true, Report: serving, Work: Report{"Backup", "a backup runs"}},
			triple{"True/Running/serves on port 30000", "True/Backup/a backup runs", noProblem}},
		{"working with a problem", Observed{Report: starting, Problem: stuck},
			triple{"False/PodPending/creating the pod", "True/PodPending/creating the pod", "True/ImagePullBackOff/the image cannot be pulled"}},
		{"blocked", Observed{Report: stuck, Problem: stuck, Blocked: true},
			triple{"False/ImagePullBackOff/the image cannot be pulled", "False/ImagePullBackOff/" + waiting, "True/ImagePullBackOff/the image cannot be pulled"}},
		{"blocked on its own report", Observed{Report: stuck, Blocked: true},
			triple{"False/ImagePullBackOff/the image cannot be pulled", "False/ImagePullBackOff/" + waiting, "True/ImagePullBackOff/the image cannot be pulled"}},
		{"paused while ready", Observed{Ready: true, Report: serving, Held: Report{ReasonPaused, "spec.paused is true"}},
			triple{"True/Running/serves on port 30000", "False/Paused/spec.paused is true", noProblem}},
		{"paused with a problem", Observed{Report: starting, Problem: stuck, Held: Report{ReasonPaused, "spec.paused is true"}},
			triple{"False/PodPending/creating the pod", "False/Paused/spec.paused is true", "True/ImagePullBackOff/the image cannot be pulled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var conds []metav1.Condition
			if !Summarize(&conds, 3, tt.o) {
				t.Error("the first Summarize reported no change")
			}
			if got := tripleOf(conds); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			for _, c := range conds {
				if c.ObservedGeneration != 3 {
					t.Errorf("%s describes generation %d, want 3", c.Type, c.ObservedGeneration)
				}
			}
			if Summarize(&conds, 3, tt.o) {
				t.Error("the same Summarize again reported a change")
			}
		})
	}
}

// Each pass sets all three: nothing an earlier pass found stays behind.
func TestSummarizeLeavesNothingBehind(t *testing.T) {
	var conds []metav1.Condition
	Summarize(&conds, 1, Observed{Report: Report{"NameConflict", "a stranger's Service"}, Blocked: true})
	Summarize(&conds, 1, Observed{Report: Report{"Starting", "the pods start"}})
	want := triple{"False/Starting/the pods start", "True/Starting/the pods start", "False/NoProblem/no problem found"}
	if got := tripleOf(conds); got != want {
		t.Errorf("after the conflict cleared:\ngot  %s\nwant %s", got, want)
	}
}

func TestObservedWith(t *testing.T) {
	starting := Observed{Report: Report{"Starting", "the pods start"}}
	serving := Observed{Ready: true, Report: Report{"Running", "serves"}}
	tests := []struct {
		name string
		o    Observed
		err  error
		want Observed
	}{
		{"no error", starting, nil, starting},
		{"an API error is the caller's", starting, errors.New("connection refused"), starting},
		{"blocked", starting, Block("NameConflict", "Service db is a stranger's"), Observed{
			Report: Report{"NameConflict", "Service db is a stranger's"}, Problem: Report{"NameConflict", "Service db is a stranger's"}, Blocked: true}},
		{"blocked while serving keeps what serves", serving, Block("NameConflict", "Service db is a stranger's"), Observed{
			Ready: true, Report: serving.Report, Problem: Report{"NameConflict", "Service db is a stranger's"}, Blocked: true}},
		{"waiting", starting, fmt.Errorf("pass: %w", Wait("Backup", "the backup Job runs")), Observed{
			Report: Report{"Backup", "the backup Job runs"}, Work: Report{"Backup", "the backup Job runs"}}},
		{"waiting while serving", serving, Wait("Backup", "the backup Job runs"), Observed{
			Ready: true, Report: serving.Report, Work: Report{"Backup", "the backup Job runs"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.With(tt.err); got != tt.want {
				t.Errorf("With(%v) =\n %+v\nwant\n %+v", tt.err, got, tt.want)
			}
		})
	}
}
