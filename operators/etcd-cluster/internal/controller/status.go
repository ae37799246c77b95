package controller

import (
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
	ReasonQuorum       = "QuorumHealthy"
	ReasonBootstrap    = "Bootstrapping"
	ReasonUnreachable  = "MembersUnreachable"
	ReasonPaused       = "Paused"
	ReasonReconciled   = "Reconciled"
	ReasonRolling      = "RollingVersion"
	ReasonDataLost     = "DataLost"
	ReasonInvalid      = "InvalidSpec"
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
)

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
	// planned: the members answered, and step is planned for them.
	planned bool
	members []membership.Member
	step    membership.Step
	// restarted is the member whose pod the roll restarted, outdated how
	// many members still ran another version before.
	restarted string
	outdated  int
}

// summarize sets the status from what one pass found and did, and from the
// error that ended it (a child the API server refused, an object in a
// child's way, a version etcd cannot move to).
func summarize(c *etcdv1.EtcdCluster, p pass, err error) {
	c.Status.ServiceName = clientServiceName(c.Name)
	c.Status.ClientPort = clientPort
	c.Status.ControlPaused = c.Spec.Paused
	switch {
	case c.Spec.Paused:
		paused(c)
		return
	case p.invalid != nil:
		invalid(c, p.invalid)
	case p.lost:
		lost(c)
	case p.planned:
		report(c, p.members, p.obs, p.step, time.Now())
		if p.restarted != "" {
			rolling(c, p.restarted, p.outdated)
		}
	default:
		if p.unanswered != nil {
			unreachable(c, p.obs, p.unanswered)
		}
		if p.bootstrap != nil {
			bootstrapping(c, p.bootstrap)
		}
	}
	if reason, msg, isBlocked, _ := conditions.Reported(err); isBlocked {
		blocked(c, reason, msg)
	}
}

func set(c *etcdv1.EtcdCluster, typ string, s metav1.ConditionStatus, reason, format string, args ...any) {
	conditions.Set(&c.Status.Conditions, c.Generation, typ, s, reason, format, args...)
}

func paused(c *etcdv1.EtcdCluster) {
	set(c, conditions.Progressing, metav1.ConditionFalse, ReasonPaused,
		"spec.paused is true: no member is added, removed, started or upgraded until it is false")
}

func invalid(c *etcdv1.EtcdCluster, err error) {
	c.Status.Reason = err.Error()
	set(c, conditions.Progressing, metav1.ConditionFalse, ReasonInvalid, "%v", err)
	set(c, conditions.Degraded, metav1.ConditionTrue, ReasonInvalid, "%v", err)
}

// blocked reports what only a person can fix (conditions.Blocked): an
// object in the way of a child (apply.Claim, NameConflict), a child the API
// server refuses (Refused), a version etcd cannot move to.
func blocked(c *etcdv1.EtcdCluster, reason, msg string) {
	c.Status.Reason = msg
	set(c, conditions.Ready, metav1.ConditionFalse, reason, "%s", msg)
	set(c, conditions.Progressing, metav1.ConditionFalse, reason, "waiting for a person to act: see Degraded")
	set(c, conditions.Degraded, metav1.ConditionTrue, reason, "%s", msg)
}

// lost reports a cluster that served once and has neither pods nor volumes
// left. Starting it empty would hide that its data is gone.
func lost(c *etcdv1.EtcdCluster) {
	msg := "every member's pod and volume is gone, and the data with them; the operator does not start an empty cluster " +
		"under the same name. Restore from a backup, or delete and re-create the EtcdCluster to start empty"
	c.Status.Phase, c.Status.Reason = etcdv1.PhaseFailed, msg
	c.Status.Size, c.Status.Members = 0, etcdv1.MembersStatus{}
	set(c, Available, metav1.ConditionFalse, ReasonDataLost, "%s", msg)
	set(c, conditions.Ready, metav1.ConditionFalse, ReasonDataLost, "%s", msg)
	set(c, conditions.Progressing, metav1.ConditionFalse, ReasonDataLost, "%s", msg)
	set(c, conditions.Degraded, metav1.ConditionTrue, ReasonDataLost, "%s", msg)
}

func bootstrapping(c *etcdv1.EtcdCluster, names []string) {
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
	set(c, conditions.Progressing, metav1.ConditionTrue, ReasonBootstrap, "starting a new cluster of %s", strings.Join(names, ", "))
	set(c, conditions.Ready, metav1.ConditionFalse, ReasonBootstrap, "starting a new cluster of %s", strings.Join(names, ", "))
}

// unreachable reports that no member answered. Before the cluster first
// served, that is its members starting; afterwards, an outage.
func unreachable(c *etcdv1.EtcdCluster, obs observed, err error) {
	names := obs.names(c.Name)
	c.Status.Size = len(names)
	c.Status.Members = etcdv1.MembersStatus{Unready: names}
	set(c, conditions.Ready, metav1.ConditionFalse, ReasonUnreachable, "no member answers: %v", err)
	if !everAvailable(c) {
		c.Status.Phase = etcdv1.PhaseCreating
		set(c, Available, metav1.ConditionFalse, ReasonBootstrap, "waiting for the first members to start and elect a leader: %v", err)
		return
	}
	c.Status.Reason = fmt.Sprintf("no member answers: %v", err)
	set(c, Available, metav1.ConditionFalse, ReasonUnreachable, "no member answers: %v", err)
	set(c, conditions.Degraded, metav1.ConditionTrue, ReasonUnreachable,
		"no member answers; pods of members whose volume is kept are recreated: %v", err)
}

// report writes what etcd said and what the operator does next.
func report(c *etcdv1.EtcdCluster, members []membership.Member, obs observed, step membership.Step, now time.Time) {
	c.Status.Size = len(members)
	var ready, unready []string
	for _, m := range members {
		if m.Healthy {
			ready = append(ready, m.Name)
		} else {
			unready = append(unready, m.String())
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

	c.Status.Reason = ""
	switch step.Action {
	case membership.None:
		set(c, conditions.Progressing, metav1.ConditionFalse, ReasonReconciled, "%s", step.Reason)
	case membership.Blocked:
		c.Status.Reason = step.Reason
		if step.Cause == membership.QuorumLost && everAvailable(c) {
			c.Status.Phase = etcdv1.PhaseFailed
		}
		set(c, conditions.Progressing, metav1.ConditionFalse, string(step.Cause), "%s", step.Reason)
	case membership.Wait:
		c.Status.Reason = step.Reason
		set(c, conditions.Progressing, metav1.ConditionTrue, string(step.Cause), "%s", step.Reason)
	default:
		set(c, conditions.Progressing, metav1.ConditionTrue, string(step.Action), "%s: %s", step, step.Reason)
	}

	settled := step.Action == membership.None && len(unready) == 0 && c.Status.TargetVersion == ""
	switch waiting := podsNotReady(c.Name, members, obs); {
	case !settled:
		set(c, conditions.Ready, metav1.ConditionFalse, notReadyReason(step), "%s", step.Reason)
	case len(waiting) > 0:
		// etcd answers before the kubelet's next probe: Ready waits for
		// it, so that what kubectl shows of the pods agrees.
		set(c, conditions.Ready, metav1.ConditionFalse, ReasonPodsNotReady,
			"every member answers; waiting for the kubelet to find %s Ready (the client Service sends them no traffic before)", strings.Join(waiting, ", "))
	default:
		set(c, conditions.Ready, metav1.ConditionTrue, ReasonHealthy, "%d members, all healthy, running etcd %s", len(members), c.Status.CurrentVersion)
	}

	switch reason, why, failed := failing(members, obs, now); {
	case step.Action == membership.Blocked:
		set(c, conditions.Degraded, metav1.ConditionTrue, string(step.Cause), "%s", step.Reason)
	case failed:
		set(c, conditions.Degraded, metav1.ConditionTrue, reason, "%s not healthy%s", strings.Join(unready, ", "), why)
	case len(unready) > 0:
		// A member coming back (its pod restarted by a roll, recreated
		// on its volume, a new member catching up) is the operator's to
		// finish: Progressing says how.
		set(c, conditions.Degraded, metav1.ConditionFalse, ReasonRecovering,
			"%s not healthy yet; Degraded if not within %s", strings.Join(unready, ", "), memberGrace)
	default:
		set(c, conditions.Degraded, metav1.ConditionFalse, ReasonHealthy, "every member is healthy")
	}
}

// failing reports an unhealthy member that needs a person: its pod waits
// for one (an image that never pulls, a crash loop: the kubelet's reason
// and message), or has not been Ready for memberGrace.
func failing(members []membership.Member, obs observed, now time.Time) (reason, why string, failed bool) {
	var long []string
	for _, m := range members {
		p := obs.pods[m.Name]
		if m.Healthy || p == nil || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if r, msg, stuck := pods.Stuck(p); stuck {
			return r, ": " + msg, true
		}
		if !pods.Ready(p) && now.Sub(notReadySince(p)) > memberGrace {
			long = append(long, m.Name)
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

func rolling(c *etcdv1.EtcdCluster, member string, left int) {
	set(c, conditions.Ready, metav1.ConditionFalse, ReasonRolling, "moving to version %s", c.Spec.Version)
	set(c, conditions.Progressing, metav1.ConditionTrue, ReasonRolling,
		"moving to version %s one member at a time: %s restarts, %d to go", c.Spec.Version, member, left-1)
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
