package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/pods"
	dbv1 "github.com/operator-workshops/workshop/operators/database/api/v1"
)

// summarize writes the conditions and the workshop's message from what the
// children look like now, or from what stopped the pass: a person to act
// (Blocked) or something to wait for (Waiting). A failed API call leaves
// them as they were; the pass is retried.
func summarize(db *dbv1.Database, o observed, err error) {
	db.Status.RootPasswordSecret = ""
	if ref, _ := rootPasswordRef(db); ref != nil {
		db.Status.RootPasswordSecret = ref.Name
	}
	if _, _, _, ok := conditions.Reported(err); ok {
		conditions.Summarize(&db.Status.Conditions, db.Generation, conditions.Observed{}.With(err))
		return
	}
	if err != nil {
		return
	}
	db.Status.NodePort = o.nodePort
	db.Status.Message = fmt.Sprintf("Pod and Service created by Database %s", db.Name)
	conditions.Summarize(&db.Status.Conditions, db.Generation, serverState(db, o.pod))
}

// serverState is what the conditions say of the server's pod and port.
func serverState(db *dbv1.Database, pod *corev1.Pod) conditions.Observed {
	working := func(reason, format string, args ...any) conditions.Observed {
		return conditions.Observed{Report: conditions.Report{Reason: reason, Message: fmt.Sprintf(format, args...)}}
	}
	switch {
	case pod == nil:
		return working(ReasonPodPending, "creating Pod %s", db.Name)
	case !pod.DeletionTimestamp.IsZero():
		return working(ReasonPodTerminating, "Pod %s is terminating and will be replaced", pod.Name)
	}
	if reason, msg, stuck := pods.Stuck(pod); stuck {
		// The kubelet retries forever; only a person can fix the image, the
		// Secret key or the crash. The reason is the kubelet's.
		r := conditions.Report{Reason: reason, Message: msg}
		return conditions.Observed{Report: r, Problem: r, Blocked: true}
	}
	switch {
	case pod.Status.Phase != corev1.PodRunning:
		return working(ReasonPodPending, "Pod %s is %s", pod.Name, pod.Status.Phase)
	case !pods.Ready(pod):
		return working(ReasonPodNotReady, "Pod %s is running but not ready yet", pod.Name)
	case db.Status.NodePort == 0:
		return working(ReasonPortPending, "Service %s has no NodePort yet", db.Name)
	}
	return conditions.Observed{Ready: true, Report: conditions.Report{Reason: ReasonRunning,
		Message: fmt.Sprintf("%s is ready on NodePort %d", db.Spec.Type, db.Status.NodePort)}}
}
