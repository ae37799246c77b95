package testenv

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/conditions"
)

// CountEvents counts the Events of reason about obj, an Event repeated as a
// series (events.k8s.io) or with a count (core/v1) as many times as it
// happened.
func CountEvents(ctx context.Context, c client.Reader, obj client.Object, reason string) (int, error) {
	n, err := EventsByReason(ctx, c, obj, "")
	return n[reason], err
}

// EventsByReason counts the Events of type typ (any, if "") about obj by
// reason, as CountEvents does.
func EventsByReason(ctx context.Context, c client.Reader, obj client.Object, typ string) (map[string]int, error) {
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil, err
	}
	n := map[string]int{}
	for _, e := range events.Items {
		if e.InvolvedObject.UID != obj.GetUID() || (typ != "" && e.Type != typ) {
			continue
		}
		switch {
		case e.Series != nil:
			n[e.Reason] += int(e.Series.Count)
		case e.Count > 1:
			n[e.Reason] += int(e.Count)
		default:
			n[e.Reason]++
		}
	}
	return n, nil
}

// Reported checks what a person sees of obj, as read with its conditions
// conds, blocked for reason: Degraded True for it; no Ready that
// `kubectl wait --for=condition=Ready` would take (True and stamped with
// obj's generation: a Ready of the last spec carried out, stamped with its
// generation, is not); and one Warning event of it, however many passes
// saw the cause.
func Reported(t testing.TB, c client.Reader, obj client.Object, conds []metav1.Condition, reason string) {
	t.Helper()
	if d := meta.FindStatusCondition(conds, conditions.Degraded); d == nil || d.Status != metav1.ConditionTrue || d.Reason != reason {
		t.Errorf("Degraded %+v, want True for %s", d, reason)
	}
	if r := meta.FindStatusCondition(conds, conditions.Ready); r != nil && r.Status == metav1.ConditionTrue && r.ObservedGeneration >= obj.GetGeneration() {
		t.Errorf("Ready %+v for generation %d while Degraded for %s: kubectl wait --for=condition=Ready would pass", r, obj.GetGeneration(), reason)
	}
	Eventually(t, "one Warning event "+reason, func(ctx context.Context) error {
		n, err := EventsByReason(ctx, c, obj, corev1.EventTypeWarning)
		if err != nil {
			return err
		}
		if n[reason] != 1 {
			return fmt.Errorf("warnings %v, want one %s", n, reason)
		}
		return nil
	})
}

// Triple says Ready, Progressing and Degraded of conds as
// "Ready=Status/Reason Progressing=Status/Reason Degraded=Status/Reason",
// "unset" for one that is not there: a status table's expected value.
func Triple(conds []metav1.Condition) string {
	s := ""
	for _, typ := range []string{conditions.Ready, conditions.Progressing, conditions.Degraded} {
		if c := meta.FindStatusCondition(conds, typ); c != nil {
			s += fmt.Sprintf(" %s=%s/%s", typ, c.Status, c.Reason)
		} else {
			s += " " + typ + "=unset"
		}
	}
	return s[1:]
}
