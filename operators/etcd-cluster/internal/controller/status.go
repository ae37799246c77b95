package controller

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/pods"
	etcdv1 "github.com/operator-workshops/workshop/operators/etcd-cluster/api/v1beta2"
	"github.com/operator-workshops/workshop/operators/etcd-cluster/internal/membership"
)

// Available is the condition that a quorum of the voting members is healthy:
// the cluster serves reads and writes. `kubectl wait --for=condition=Available`
// waits for it.
const Available = "Available"

// Reasons of the conditions, besides the planner's causes and actions.
const (
	ReasonQuorum      = "QuorumHealthy"
	ReasonBootstrap   = "Bootstrapping"
	ReasonUnreachable = "MembersUnreachable"
	ReasonRolling     = "RollingVersion"
	ReasonDataLost    = "DataLost"
	ReasonInvalid     = "InvalidSpec"
	// ReasonHealthy: Ready, every member healthy.
	ReasonHealthy      = "MembersHealthy"
	ReasonMemberFailed = "MemberUnhealthy"
	// ReasonRecovering: some member is not healthy yet, as while its pod
	// restarts for a roll or after its node went away; Degraded once its
	// pod waits for a person or it stays unhealthy for memberGrace.
	ReasonRecovering = "MembersRecovering"
	// ReasonPodsNotReady: every member answers, but the kubelet has not
	// yet found some of their pods Ready, so the client Service does not
	// send them traffic.
	ReasonPodsNotReady = "PodsNotReady"
	ReasonNameConflict = conditions.ReasonNameConflict
	// ReasonVersionStep: spec.version is not a step etcd can take from
	// the version the members run.
	ReasonVersionStep = "VersionStep"
	// ReasonStepFailed: etcd answered a membership step with an error
	// (stepFailed); the pass is tried again.
	ReasonStepFailed = "MembershipChangeFailed"
)

// stepFailed is a membership step etcd refused with an error, not with a
// "not now" (the executor's Retry): Degraded says so with etcd's words,
// as long as the passes tried again meet it, so that a step etcd never
// takes (a MoveLeader asked of a release without it) is not hidden behind
// a status that says there is no problem.
type stepFailed struct {
	step membership.Step
	err  error
}

func (e *stepFailed) Error() string { return fmt.Sprintf("%s: %v", e.step, e.err) }
func (e *stepFailed) Unwrap() error { return e.err }

// memberGrace is how long a member's pod may stay not Ready, as it starts
// and catches up, before the member is reported Degraded.
const memberGrace = 2 * time.Minute

// pass is what one pass over a cluster found and did. summarize reports it:
// the one place the conditions are set.
type pass struct {
	// obs is what the API server holds of the members.
	obs observed
	// invalid: the operator cannot run spec.version.
	invalid error
	// lost: the cluster served once and has no pod or volume left.
	lost bool
	// unanswered is why no member answered, when none did.
	unanswered error
	// bootstrap names the first members while they start.
	bootstrap []string
	// planned: the members answered, and step is planned for them (and
	// taken, unless the cluster is paused).
	planned bool
	members []membership.Member
	step    membership.Step
	// served: the cluster has served once (EtcdClusterReconciler.served),
	// so its data is in its members' volumes.
	served bool
	// restarted is the member whose pod the roll restarted, outdated how
	// many members still ran another version before.
	restarted string
	outdated  int
}

// plan notes the step planned for members.
func (p *pass) plan(c *etcdv1.EtcdCluster, members []membership.Member, opts membership.Options) {
	p.members, p.step, p.planned = members, membership.Next(c.Spec.Size, members, opts), true
}

// summarize sets the status from what one pass found and did, and from the
// error that ended it (a child the API server refused, an object in a
// child's way, a version etcd cannot move to).
func summarize(c *etcdv1.EtcdCluster, p pass, err error) {
	summarizeAt(c, p, err, time.Now())
}

// summarizeAt is summarize at the time now: Ready, Progressing and Degraded
// are set together from one conditions.Observed, every pass, so that none
// keeps what an earlier pass found. A pass that found nothing (an API call
// failed before it could look) leaves them as they were: it is retried.
func summarizeAt(c *etcdv1.EtcdCluster, p pass, err error, now time.Time) {
	c.Status.ServiceName = clientServiceName(c.Name)
	c.Status.ClientPort = clientPort
	c.Status.ControlPaused = c.Spec.Paused
	o, found := state(c, p, now)
	reason, msg, blocked, reported := conditions.Reported(err)
	switch {
	case blocked:
		// Something only a person can fix is in the spec's way.
		c.Status.Reason = msg
		o.Ready = false
		o.Report = conditions.Report{Reason: reason, Message: msg}
	case !found && !reported && !c.Spec.Paused:
		return
	}
	if failed := (*stepFailed)(nil); errors.As(err, &failed) && found {
		o.Problem = conditions.Report{Reason: ReasonStepFailed, Message: fmt.Sprintf(
			"etcd refused %s: %v; the operator tries again", failed.step, failed.err)}
	}
	if c.Spec.Paused {
		o.Held = conditions.Report{Reason: conditions.ReasonPaused, Message: pausedMessage(p)}
	}
	conditions.Summarize(&c.Status.Conditions, c.Generation, o.With(err))
}

// pausedMessage says what a paused cluster does not do, and the step it
// would take next.
func pausedMessage(p pass) string {
	msg := "spec.paused is true: no member is added, removed, started or upgraded until it is false"
	switch {
	case p.planned && p.step.Action != membership.None && p.step.Action != membership.Wait && p.step.Action != membership.Blocked:
		msg += fmt.Sprintf("; the next step is %s: %s", p.step, p.step.Reason)
	case p.planned && p.step.Action == membership.None && p.step.Reason != "":
		msg += "; " + p.step.Reason
	}
	return msg
}

// state is what the conditions say of the pass p, and whether p found
// anything to say.
func state(c *etcdv1.EtcdCluster, p pass, now time.Time) (conditions.Observed, bool) {
	switch {
	case p.invalid != nil:
		c.Status.Reason = p.invalid.Error()
		r := conditions.Report{Reason: ReasonInvalid, Message: p.invalid.Error()}
		return conditions.Observed{Report: r, Problem: r, Blocked: true}, true
	case p.lost:
		return lost(c), true
	case p.planned:
		o := report(c, p, now)
		if p.restarted != "" {
			o.Ready = false
			o.Report = conditions.Report{Reason: ReasonRolling, Message: fmt.Sprintf("moving to version %s", c.Spec.Version)}
			o.Work = conditions.Report{Reason: ReasonRolling, Message: fmt.Sprintf(
				"moving to version %s one member at a time: %s restarts, %d to go", c.Spec.Version, p.restarted, p.outdated-1)}
		}
		return o, true
	case p.bootstrap != nil:
		return bootstrapping(c, p, now), true
	case p.unanswered != nil:
		return unreachable(c, p, now), true
	case c.Spec.Paused:
		return conditions.Observed{Report: conditions.Report{Reason: conditions.ReasonPaused,
			Message: "spec.paused is true: no member is started until it is false"}}, true
	}
	return conditions.Observed{}, false
}

// lost reports a cluster that served once and has neither pods nor volumes
// left. Starting it empty would hide that its data is gone.
func lost(c *etcdv1.EtcdCluster) conditions.Observed {
	msg := "every member's pod and volume is gone, and the data with them; the operator does not start an empty cluster " +
		"under the same name. Restore from a backup, or delete and re-create the EtcdCluster to start empty"
	c.Status.Phase, c.Status.Reason = etcdv1.PhaseFailed, msg
	c.Status.Size, c.Status.Members = 0, etcdv1.MembersStatus{}
	set(c, Available, metav1.ConditionFalse, ReasonDataLost, "%s", msg)
	r := conditions.Report{Reason: ReasonDataLost, Message: msg}
	return conditions.Observed{Report: r, Problem: r, Blocked: true}
}

func set(c *etcdv1.EtcdCluster, typ string, s metav1.ConditionStatus, reason, format string, args ...any) {
	conditions.Set(&c.Status.Conditions, c.Generation, typ, s, reason, format, args...)
}

// bootstrapping reports the first members of a new cluster while they
// start. It is Degraded once they need a person: a pod the kubelet cannot
// run, or no member answering for memberGrace.
func bootstrapping(c *etcdv1.EtcdCluster, p pass, now time.Time) conditions.Observed {
	names := p.bootstrap
	if c.Status.Phase == "" {
		c.Status.Phase = etcdv1.PhaseCreating
	}
	c.Status.Size = len(names)
	if len(c.Status.Members.Ready) == 0 {
		c.Status.Members.Unready = names
	}
	if !conditions.IsTrue(c.Status.Conditions, Available) {
		set(c, Available, metav1.ConditionFalse, ReasonBootstrap, "the first %d members are starting", len(names))
	}
	o := conditions.Observed{Report: conditions.Report{Reason: ReasonBootstrap,
		Message: fmt.Sprintf("starting a new cluster of %s", strings.Join(names, ", "))}}
	if reason, why, failed := failing(names, p.obs, now); failed {
		o.Problem = conditions.Report{Reason: reason, Message: fmt.Sprintf("the new cluster's members do not start%s", why)}
		if p.unanswered != nil {
			o.Problem.Message += fmt.Sprintf("; no member answers: %v", p.unanswered)
		}
	}
	return o
}

// unreachable reports a cluster that served once and none of whose members
// answers: an outage. The operator recreates the pods of members whose
// volume is kept.
func unreachable(c *etcdv1.EtcdCluster, p pass, now time.Time) conditions.Observed {
	names := p.obs.names(c.Name)
	c.Status.Size = len(names)
	c.Status.Members = etcdv1.MembersStatus{Unready: names}
	msg := fmt.Sprintf("no member answers: %v", p.unanswered)
	c.Status.Reason = msg
	set(c, Available, metav1.ConditionFalse, ReasonUnreachable, "%s", msg)
	o := conditions.Observed{
		Report:  conditions.Report{Reason: ReasonUnreachable, Message: msg},
		Problem: conditions.Report{Reason: ReasonUnreachable, Message: "no member answers; pods of members whose volume is kept are recreated: " + p.unanswered.Error()},
	}
	if reason, why, failed := failing(names, p.obs, now); failed {
		o.Problem = conditions.Report{Reason: reason, Message: msg + why}
	}
	return o
}

// report writes what etcd said and what the operator does next.
func report(c *etcdv1.EtcdCluster, p pass, now time.Time) conditions.Observed {
	members, obs, step := p.members, p.obs, p.step
	c.Status.Size = len(members)
	var ready, unready, unhealthy []string
	for _, m := range members {
		if m.Healthy {
			ready = append(ready, m.Name)
		} else {
			unready = append(unready, m.String())
			unhealthy = append(unhealthy, m.Name)
		}
	}
	sortByOrdinal(c.Name, ready)
	sortByOrdinal(c.Name, unready)
	c.Status.Members = etcdv1.MembersStatus{Ready: ready, Unready: unready}
	c.Status.CurrentVersion, c.Status.TargetVersion = versions(c, obs)

	v := membership.Availability(members)
	even := ""
	if c.Spec.Size%2 == 0 {
		even = fmt.Sprintf("; size %d tolerates no more failures than size %d: odd sizes are advised", c.Spec.Size, c.Spec.Size-1)
	}
	if v.Available() {
		c.Status.Phase = etcdv1.PhaseRunning
		set(c, Available, metav1.ConditionTrue, ReasonQuorum, "%s%s", v, even)
	} else {
		set(c, Available, metav1.ConditionFalse, string(membership.QuorumLost), "%s", v)
	}

	var o conditions.Observed
	c.Status.Reason = ""
	switch step.Action {
	case membership.None:
	case membership.Blocked:
		c.Status.Reason = step.Reason
		if step.Cause == membership.QuorumLost && p.served {
			c.Status.Phase = etcdv1.PhaseFailed
		}
		o.Problem, o.Blocked = conditions.Report{Reason: string(step.Cause), Message: step.Reason}, true
	case membership.Wait:
		c.Status.Reason = step.Reason
		o.Work = conditions.Report{Reason: string(step.Cause), Message: step.Reason}
	default:
		o.Work = conditions.Report{Reason: string(step.Action), Message: fmt.Sprintf("%s: %s", step, step.Reason)}
	}

	settled := step.Action == membership.None && len(unready) == 0 && c.Status.TargetVersion == ""
	switch waiting := podsNotReady(c.Name, members, obs); {
	case !settled:
		o.Report = conditions.Report{Reason: notReadyReason(step), Message: step.Reason}
	case len(waiting) > 0:
		// etcd answers before the kubelet's next probe: Ready waits for
		// it, so that what kubectl shows of the pods agrees.
		o.Report = conditions.Report{Reason: ReasonPodsNotReady, Message: fmt.Sprintf(
			"every member answers; waiting for the kubelet to find %s Ready (the client Service sends them no traffic before)", strings.Join(waiting, ", "))}
	default:
		o.Ready = true
		o.Report = conditions.Report{Reason: ReasonHealthy, Message: fmt.Sprintf("%d members, all healthy, running etcd %s", len(members), c.Status.CurrentVersion)}
	}

	switch reason, why, failed := failing(unhealthy, obs, now); {
	case o.Blocked:
	case failed:
		o.Problem = conditions.Report{Reason: reason, Message: fmt.Sprintf("%s not healthy%s", strings.Join(unready, ", "), why)}
	case len(unready) > 0 && o.Work.Reason == "":
		// A member coming back (its pod restarted by a roll, recreated
		// on its volume, a new member catching up) is the operator's to
		// finish: Progressing says how.
		o.Work = conditions.Report{Reason: ReasonRecovering, Message: fmt.Sprintf(
			"%s not healthy yet; Degraded if not within %s", strings.Join(unready, ", "), memberGrace)}
	}
	return o
}

// failing reports an unhealthy member of names that needs a person: its
// pod waits for one (an image that never pulls, a crash loop: the kubelet's
// reason and message), or has not been Ready for memberGrace.
func failing(names []string, obs observed, now time.Time) (reason, why string, failed bool) {
	var long []string
	for _, name := range names {
		p := obs.pods[name]
		if p == nil || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if r, msg, stuck := pods.Stuck(p); stuck {
			return r, ": " + msg, true
		}
		if !pods.Ready(p) && now.Sub(notReadySince(p)) > memberGrace {
			long = append(long, name)
		}
	}
	if len(long) > 0 {
		return ReasonMemberFailed, fmt.Sprintf(": the pod of %s has not been Ready for %s", strings.Join(long, ", "), memberGrace), true
	}
	return "", "", false
}

// notReadySince is when the pod was last found not Ready, or was created.
func notReadySince(p *corev1.Pod) time.Time {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady && !cond.LastTransitionTime.IsZero() {
			return cond.LastTransitionTime.Time
		}
	}
	return p.CreationTimestamp.Time
}

// podsNotReady names the members whose pod is missing or not Ready, in
// ordinal order.
func podsNotReady(cluster string, members []membership.Member, obs observed) []string {
	var names []string
	for _, m := range members {
		if p := obs.pods[m.Name]; p == nil || !pods.Ready(p) {
			names = append(names, m.Name)
		}
	}
	sortByOrdinal(cluster, names)
	return names
}

// notReadyReason is the reason of Ready=False for a step.
func notReadyReason(step membership.Step) string {
	switch step.Action {
	case membership.Wait, membership.Blocked:
		return string(step.Cause)
	case membership.None:
		return ReasonRolling
	}
	return string(step.Action)
}

// versions reads the version the member pods run off their image tags:
// current is the one every pod runs, or the oldest while a roll is under
// way, and target the version the roll moves to.
func versions(c *etcdv1.EtcdCluster, obs observed) (current, target string) {
	want := strings.TrimPrefix(c.Spec.Version, "v")
	var others []string
	for _, p := range obs.pods {
		if v := imageVersion(p); v != want && !slices.Contains(others, v) {
			others = append(others, v)
		}
	}
	if len(others) == 0 {
		return want, ""
	}
	slices.Sort(others)
	return others[0], want
}
