// Package replicas is the arithmetic of keeping exactly N pods: which pods
// count, how many to create, which to delete first. It touches no API server,
// so every rule is tested on its own.
package replicas

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/operator-workshops/workshop/operators/common/pods"
)

// Plan is what one reconcile does to reach the desired count.
type Plan struct {
	// Keep are the pods that count towards the desired number after the plan.
	Keep []*corev1.Pod
	// Create is how many pods to create.
	Create int
	// Delete are the pods to delete: those that ended, and the surplus.
	Delete []*corev1.Pod
}

// Compute plans how to go from pods to exactly desired running pods. Pods
// already terminating are ignored (they are on their way out); pods that
// ended (Failed or Succeeded) are deleted and replaced.
func Compute(list []*corev1.Pod, desired int) Plan {
	var p Plan
	for _, pod := range list {
		switch {
		case Terminating(pod):
		case pods.Ended(pod):
			p.Delete = append(p.Delete, pod)
		default:
			p.Keep = append(p.Keep, pod)
		}
	}
	switch n := len(p.Keep); {
	case n < desired:
		p.Create = desired - n
	case n > desired:
		victims := Victims(p.Keep, n-desired)
		p.Delete = append(p.Delete, victims...)
		p.Keep = without(p.Keep, victims)
	}
	return p
}

// Victims returns the n pods to remove on scale down: pods that are not ready
// first (they serve nobody yet), then the newest (the oldest have proven
// themselves). Names break ties, so the choice is the same on every run.
func Victims(list []*corev1.Pod, n int) []*corev1.Pod {
	sorted := append([]*corev1.Pod(nil), list...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if ra, rb := pods.Ready(a), pods.Ready(b); ra != rb {
			return !ra
		}
		if ta, tb := a.CreationTimestamp, b.CreationTimestamp; !ta.Equal(&tb) {
			return tb.Before(&ta)
		}
		return a.Name > b.Name
	})
	if n > len(sorted) {
		n = len(sorted)
	}
	return sorted[:n]
}

// Batches splits n creations into batches of 1, 2, 4, ... so that a problem
// that makes every creation fail (a quota, a bad image policy) costs one
// request, not n.
func Batches(n int) []int {
	var out []int
	for size := 1; n > 0; size *= 2 {
		if size > n {
			size = n
		}
		out = append(out, size)
		n -= size
	}
	return out
}

// Terminating reports whether the pod is being deleted.
func Terminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }

func without(pods, drop []*corev1.Pod) []*corev1.Pod {
	gone := make(map[*corev1.Pod]bool, len(drop))
	for _, p := range drop {
		gone[p] = true
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if !gone[p] {
			out = append(out, p)
		}
	}
	return out
}
