package testenv

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
