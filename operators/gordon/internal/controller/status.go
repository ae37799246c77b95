package controller

import (
	"fmt"
	"sort"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/pods"
	gordonv1 "github.com/operator-workshops/workshop/operators/gordon/api/v1"
	"github.com/operator-workshops/workshop/operators/gordon/internal/replicas"
)

// summarize writes the status: the pods kept, how many are ready, and the
// conditions. Without a plan (the pods could not be listed) it leaves the
// status as it was: the pass is retried.
func summarize(g *gordonv1.Gordon, plan *replicas.Plan, err error) {
	if plan == nil {
		return
	}
	s := &g.Status
	s.Selector = selector(g)
	s.Replicas = int32(len(plan.Keep))
	s.ReadyReplicas = 0
	s.Pods = nil
	for _, pod := range plan.Keep {
		s.Pods = append(s.Pods, pod.Name)
		if pods.Ready(pod) {
			s.ReadyReplicas++
		}
	}
	sort.Strings(s.Pods)
	conditions.Summarize(&s.Conditions, g.Generation, state(s, g.Spec.Gordon.Replicas, plan, err))
}

// state is what the conditions say of a pass: the status it wrote, its
// plan and the error that ended it.
func state(s *gordonv1.GordonStatus, desired int32, plan *replicas.Plan, err error) conditions.Observed {
	// Kept pods that cannot run, the first one's reason and message as
	// the example.
	stuck, stuckReason, stuckMessage := 0, "", ""
	for _, pod := range plan.Keep {
		if reason, message, ok := pods.Stuck(pod); ok {
			if stuck++; stuck == 1 {
				stuckReason, stuckMessage = reason, message
			}
		}
	}
	var o conditions.Observed
	if stuck > 0 {
		// The kubelet retries forever: a person must fix the image or the
		// crash. The reason is the kubelet's.
		o.Problem = conditions.Report{Reason: stuckReason,
			Message: fmt.Sprintf("%d of %d pods cannot run; %s", stuck, len(plan.Keep), stuckMessage)}
	}
	report := func(reason, format string, args ...any) {
		o.Report = conditions.Report{Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	blockedReason, blockedMessage, blocked, _ := conditions.Reported(err)
	switch {
	case blocked:
		// The API server refuses the pods (reconciler.Run made the
		// refusal Blocked): its message says why.
		report(blockedReason, "%d of %d pods ready; %s", s.ReadyReplicas, desired, blockedMessage)
		o.Problem, o.Blocked = conditions.Report{Reason: blockedReason, Message: blockedMessage}, true
	case err != nil:
		report(ReasonCreateFail, "%v", err)
		o.Work = conditions.Report{Reason: ReasonCreateFail, Message: "retrying"}
	case plan.Create > 0 || len(plan.Delete) > 0:
		report(ReasonScaling, "scaling from %d to %d pods", s.Replicas, desired)
	case stuck > 0:
		report(stuckReason, "%d of %d pods ready", s.ReadyReplicas, desired)
		o.Blocked = true
	case s.ReadyReplicas < desired:
		report(ReasonWaiting, "%d of %d pods ready", s.ReadyReplicas, desired)
	default:
		report(ReasonAllReady, "%d of %d pods ready", s.ReadyReplicas, desired)
		o.Ready = true
	}
	return o
}
