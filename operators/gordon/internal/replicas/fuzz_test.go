package replicas

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-workshops/workshop/operators/common/pods"
)

// podsFrom decodes a fuzzer's bytes into pods: each byte is one pod, its low
// bits its state (terminating, ended, ready) and its high bits its age.
func podsFrom(b []byte) []*corev1.Pod {
	var list []*corev1.Pod
	for i, x := range b {
		p := pod(fmt.Sprintf("gordon-%d", i), time.Duration(x>>3)*time.Minute)
		if x&1 != 0 {
			p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1_000_000, 0)}
		}
		if x&2 != 0 {
			p.Status.Phase = corev1.PodFailed
		}
		if x&4 == 0 {
			p.Status.Conditions[0].Status = corev1.ConditionFalse
		}
		list = append(list, p)
	}
	return list
}

// Compute's arithmetic on any pods: exactly desired pods after the plan,
// ended pods deleted, terminating ones left alone, and no ready pod deleted
// for the surplus while one that is not ready is kept.
func FuzzCompute(f *testing.F) {
	f.Add(3, []byte{4, 4, 4})
	f.Add(1, []byte{4, 0, 12, 2, 1})
	f.Add(0, []byte{4, 6, 5})
	f.Add(5, []byte{})
	f.Fuzz(func(t *testing.T, desired int, b []byte) {
		desired = max(desired%1001, 0)
		list := podsFrom(b)
		p := Compute(list, desired)
		if len(p.Keep)+p.Create != desired || p.Create < 0 {
			t.Fatalf("keeps %d and creates %d for %d wanted", len(p.Keep), p.Create, desired)
		}
		// Sets, not scans: the fuzzer grows inputs to thousands of pods, and
		// a quadratic check would stall it (it ran at 0 execs/s for seconds).
		keep, del := set(p.Keep), set(p.Delete)
		notReadyKept := slices.ContainsFunc(p.Keep, func(k *corev1.Pod) bool { return !pods.Ready(k) })
		for _, pod := range list {
			kept, deleted := keep[pod], del[pod]
			switch {
			case kept && deleted:
				t.Fatalf("%s is kept and deleted", pod.Name)
			case Terminating(pod) && (kept || deleted):
				t.Fatalf("terminating %s is kept %v, deleted %v", pod.Name, kept, deleted)
			case !Terminating(pod) && pods.Ended(pod) && !deleted:
				t.Fatalf("ended %s is not deleted", pod.Name)
			case !Terminating(pod) && !pods.Ended(pod) && !kept && !deleted:
				t.Fatalf("running %s is neither kept nor deleted", pod.Name)
			case deleted && !pods.Ended(pod) && pods.Ready(pod) && notReadyKept:
				t.Fatalf("ready %s is deleted while a pod that is not ready is kept", pod.Name)
			}
		}
		if p.Create > 0 && len(p.Delete) > 0 && slices.ContainsFunc(p.Delete, func(d *corev1.Pod) bool { return !pods.Ended(d) }) {
			t.Fatalf("creates %d and deletes running pods %v", p.Create, p.Delete)
		}
	})
}

// set is pods as a set, by pointer (the plan holds the pods it was given).
func set(pods []*corev1.Pod) map[*corev1.Pod]bool {
	m := make(map[*corev1.Pod]bool, len(pods))
	for _, p := range pods {
		m[p] = true
	}
	return m
}

// Batches splits any n into batches that add up to n, each at most twice
// the one before.
func FuzzBatches(f *testing.F) {
	f.Add(0)
	f.Add(7)
	f.Add(1000)
	f.Fuzz(func(t *testing.T, n int) {
		n = max(n%5000, 0)
		sum, last := 0, 0
		for _, b := range Batches(n) {
			if b < 1 || (last > 0 && b > 2*last) {
				t.Fatalf("Batches(%d) = %v", n, Batches(n))
			}
			sum, last = sum+b, b
		}
		if sum != n {
			t.Fatalf("Batches(%d) = %v adds up to %d", n, Batches(n), sum)
		}
	})
}
