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
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(obj.GetNamespace())); err != nil {
		return 0, err
	}
	n := 0
	for _, e := range events.Items {
		if e.Reason != reason || e.InvolvedObject.UID != obj.GetUID() {
			continue
		}
		switch {
		case e.Series != nil:
			n += int(e.Series.Count)
		case e.Count > 1:
			n += int(e.Count)
		default:
			n++
		}
	}
	return n, nil
}
