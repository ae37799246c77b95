package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/testenv"
	etcdv1 "github.com/operator-workshops/workshop/operators/etcd-cluster/api/v1beta2"
	"github.com/operator-workshops/workshop/operators/etcd-cluster/internal/membership"
)

// statusNow is the time the status table is summarized at.
var statusNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// memberPod is the pod of member name, created at created, Ready or not
// since then; waiting, when set, is the kubelet's reason for its container.
func memberPod(name string, created time.Time, ready bool, waiting string) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "etc", CreationTimestamp: metav1.NewTime(created)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "quay.io/coreos/etcd:v3.5.0"}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(created)},
		}},
	}
	if waiting != "" {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: waiting, Message: "the kubelet says " + waiting},
		}}}
	}
	return p
}

// podsOf are the pods of the members names, all created at created.
func podsOf(created time.Time, ready bool, waiting string, names ...string) observed {
	o := observed{pods: map[string]*corev1.Pod{}}
	for _, n := range names {
		o.pods[n] = memberPod(n, created, ready, waiting)
	}
	return o
}

// TestStatusOfEachPass maps what a pass observed to Ready, Progressing and
// Degraded. The expectations are written from what the conditions mean
// (Ready: the spec serves; Progressing: the operator works on by itself;
// Degraded: a person should look), and each row starts from the status an
// earlier pass left, to show that nothing of it stays behind.
func TestStatusOfEachPass(t *testing.T) {
	names := []string{"example-0", "example-1", "example-2"}
	healthy := []membership.Member{
		{ID: 1, Name: "example-0", Healthy: true, ClientURLs: []string{"http://example-0:2379"}},
		{ID: 2, Name: "example-1", Healthy: true, ClientURLs: []string{"http://example-1:2379"}},
		{ID: 3, Name: "example-2", Healthy: true, ClientURLs: []string{"http://example-2:2379"}},
	}
	_, twoOfThree := twoOfThreeHealthy("3.5.0")
	longAgo, justNow := statusNow.Add(-memberGrace-time.Minute), statusNow.Add(-10*time.Second)
	nothingToDo := membership.Step{Action: membership.None, Reason: "3 members, as the spec asks"}
	addMember := membership.Step{Action: membership.Add, Member: membership.Member{Name: "example-3"}, Reason: "scale up from 3 to 5 members"}
	waitForMember := membership.Step{Action: membership.Wait, Cause: membership.MemberUnhealthy, Reason: "example-2 is not healthy"}
	unanswered := errors.New("context deadline exceeded")
	conflict := conditions.NameConflict("Service", "example-client", "", "")

	// Members that run 3.4 while the spec asks for 3.5: an upgrade.
	olderRelease := podsOf(longAgo, true, "", names...)
	for _, p := range olderRelease.pods {
		p.Spec.Containers[0].Image = "quay.io/coreos/etcd:v3.4.0"
	}

	// Statuses an earlier pass left.
	wasReady := func(c *etcdv1.EtcdCluster) {
		c.Status.Phase = etcdv1.PhaseRunning
		summarizeAt(c, pass{planned: true, members: healthy, obs: podsOf(longAgo, true, "", names...), step: nothingToDo}, nil, statusNow)
	}
	wasBlocked := func(c *etcdv1.EtcdCluster) { summarizeAt(c, pass{}, conflict, statusNow) }
	fresh := func(*etcdv1.EtcdCluster) {}

	tests := []struct {
		name   string
		before func(*etcdv1.EtcdCluster)
		paused bool
		p      pass
		err    error
		want   string
	}{
		{"every member healthy", fresh, false,
			pass{planned: true, members: healthy, obs: podsOf(longAgo, true, "", names...), step: nothingToDo}, nil,
			"Ready=True/MembersHealthy Progressing=False/UpToDate Degraded=False/NoProblem"},
		{"scaling up", wasReady, false,
			pass{planned: true, members: healthy, obs: podsOf(longAgo, true, "", names...),
				step: membership.Step{Action: membership.Add, Member: membership.Member{Name: "example-3"}, Reason: "scale up from 3 to 5 members"}}, nil,
			"Ready=False/Add Progressing=True/Add Degraded=False/NoProblem"},
		{"a member coming back", wasReady, false,
			pass{planned: true, members: twoOfThree, obs: podsOf(justNow, false, "", "example-2"), step: waitForMember}, nil,
			"Ready=False/MemberUnhealthy Progressing=True/MemberUnhealthy Degraded=False/NoProblem"},
		{"quorum lost", wasReady, false,
			pass{planned: true, members: twoOfThree[2:], step: membership.Step{Action: membership.Blocked, Cause: membership.QuorumLost, Reason: "1 of 3 healthy"}}, nil,
			"Ready=False/QuorumLost Progressing=False/QuorumLost Degraded=True/QuorumLost"},
		{"paused while a member is down: Ready no longer says what it said", wasReady, true,
			pass{planned: true, members: twoOfThree, obs: podsOf(justNow, false, "", "example-2"), step: waitForMember}, nil,
			"Ready=False/MemberUnhealthy Progressing=False/Paused Degraded=False/NoProblem"},
		{"paused and healthy", wasReady, true,
			pass{planned: true, members: healthy, obs: podsOf(longAgo, true, "", names...), step: nothingToDo}, nil,
			"Ready=True/MembersHealthy Progressing=False/Paused Degraded=False/NoProblem"},
		{"paused before its first member", fresh, true, pass{}, nil,
			"Ready=False/Paused Progressing=False/Paused Degraded=False/NoProblem"},
		{"a name conflict cleared while the first members start", wasBlocked, false,
			pass{bootstrap: names, obs: podsOf(justNow, false, "", names...)}, nil,
			"Ready=False/Bootstrapping Progressing=True/Bootstrapping Degraded=False/NoProblem"},
		{"a new cluster whose image never pulls", fresh, false,
			pass{bootstrap: names, unanswered: unanswered, obs: podsOf(justNow, false, "ImagePullBackOff", names...)}, nil,
			"Ready=False/Bootstrapping Progressing=True/Bootstrapping Degraded=True/ImagePullBackOff"},
		{"a new cluster whose members never answer", fresh, false,
			pass{bootstrap: names, unanswered: unanswered, obs: podsOf(longAgo, false, "", names...)}, nil,
			"Ready=False/Bootstrapping Progressing=True/Bootstrapping Degraded=True/MemberUnhealthy"},
		{"a new cluster within its grace", fresh, false,
			pass{bootstrap: names, unanswered: unanswered, obs: podsOf(justNow, false, "", names...)}, nil,
			"Ready=False/Bootstrapping Progressing=True/Bootstrapping Degraded=False/NoProblem"},
		{"a name in the way", wasReady, false, pass{}, conflict,
			"Ready=False/NameConflict Progressing=False/NameConflict Degraded=True/NameConflict"},
		{"a version the operator cannot run", wasReady, false, pass{invalid: errors.New("etcd 4.0.0 is not supported")}, nil,
			"Ready=False/InvalidSpec Progressing=False/InvalidSpec Degraded=True/InvalidSpec"},
		{"every pod and volume gone", wasReady, false, pass{lost: true}, nil,
			"Ready=False/DataLost Progressing=False/DataLost Degraded=True/DataLost"},
		{"no member answers once it served", wasReady, false,
			pass{unanswered: unanswered, obs: podsOf(justNow, false, "", names...)}, nil,
			"Ready=False/MembersUnreachable Progressing=True/MembersUnreachable Degraded=True/MembersUnreachable"},
		{"etcd refuses a membership change", wasReady, false,
			pass{planned: true, members: healthy, obs: podsOf(longAgo, true, "", names...), step: addMember},
			&stepFailed{step: addMember, err: errors.New("etcdserver: unhealthy cluster")},
			"Ready=False/Add Progressing=True/Add Degraded=True/MembershipChangeFailed"},
		{"etcd refuses to hand its leadership over, at an upgrade", wasReady, false,
			pass{planned: true, members: healthy, obs: olderRelease, step: nothingToDo},
			&stepFailed{step: membership.Step{Action: membership.MoveLeader, Member: healthy[0], To: healthy[1]},
				err: errors.New("rpc error: code = Unimplemented desc = unknown service etcdserverpb.Maintenance")},
			"Ready=False/RollingVersion Progressing=True/RollingVersion Degraded=True/MembershipChangeFailed"},
		{"an API error before anything was seen leaves the status", wasReady, false, pass{}, errors.New("connection refused"),
			"Ready=True/MembersHealthy Progressing=False/UpToDate Degraded=False/NoProblem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "example", Namespace: "etc", Generation: 2},
				Spec: etcdv1.ClusterSpec{Size: 3, Version: "3.5.0"}}
			tt.before(c)
			c.Spec.Paused = tt.paused
			summarizeAt(c, tt.p, tt.err, statusNow)
			if got := testenv.Triple(c.Status.Conditions); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// A step etcd refuses is Degraded in etcd's words, naming the step.
func TestRefusedStepSaysEtcdsWords(t *testing.T) {
	c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "example", Namespace: "etc", Generation: 1},
		Spec: etcdv1.ClusterSpec{Size: 4, Version: "3.5.0"}}
	add := membership.Step{Action: membership.Add, Member: membership.Member{Name: "example-3"}, Reason: "scale up from 3 to 4 members"}
	members := []membership.Member{{ID: 1, Name: "example-0", Healthy: true}, {ID: 2, Name: "example-1", Healthy: true}, {ID: 3, Name: "example-2", Healthy: true}}
	summarizeAt(c, pass{planned: true, members: members, obs: podsOf(statusNow, true, "", "example-0", "example-1", "example-2"), step: add},
		&stepFailed{step: add, err: errors.New("etcdserver: unhealthy cluster")}, statusNow)
	d := meta.FindStatusCondition(c.Status.Conditions, conditions.Degraded)
	if d == nil || !strings.Contains(d.Message, "etcd refused Add example-3") || !strings.Contains(d.Message, "etcdserver: unhealthy cluster") {
		t.Errorf("Degraded is %+v", d)
	}
}

// A cluster whose members never answer says why, with the members' error.
func TestNewClusterNeverAnsweringSaysWhy(t *testing.T) {
	c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "example", Namespace: "etc"}, Spec: etcdv1.ClusterSpec{Size: 1, Version: "3.5.0"}}
	summarizeAt(c, pass{bootstrap: []string{"example-0"}, unanswered: errors.New("dial tcp: connection refused"),
		obs: podsOf(statusNow.Add(-memberGrace-time.Second), false, "", "example-0")}, nil, statusNow)
	d := meta.FindStatusCondition(c.Status.Conditions, conditions.Degraded)
	if d == nil || d.Status != metav1.ConditionTrue {
		t.Fatalf("Degraded %+v, want True", d)
	}
	for _, want := range []string{"example-0", "dial tcp: connection refused"} {
		if !strings.Contains(d.Message, want) {
			t.Errorf("Degraded says %q, want it to name %q", d.Message, want)
		}
	}
}
