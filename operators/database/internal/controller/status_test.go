package controller

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/secrets"
	"github.com/operator-workshops/workshop/operators/common/testenv"
	dbv1 "github.com/operator-workshops/workshop/operators/database/api/v1"
)

// TestStatusOfEachPass maps what a pass observed of the server's pod and
// port to Ready, Progressing and Degraded. The expectations are written from
// what the conditions mean (Ready: it serves; Progressing: the operator or
// the kubelet works on by itself; Degraded: a person should look), and each
// row starts from a Database that was ready, so nothing of that stays.
func TestStatusOfEachPass(t *testing.T) {
	pod := func(phase corev1.PodPhase, ready bool, waiting string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Status: corev1.PodStatus{Phase: phase}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		if waiting != "" {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "db", State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: waiting, Message: "the kubelet says so"}}}}
		}
		return p
	}
	terminating := pod(corev1.PodRunning, true, "")
	terminating.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	running := pod(corev1.PodRunning, true, "")
	tests := []struct {
		name string
		o    observed
		err  error
		want string
	}{
		{"serving", observed{pod: running, nodePort: 30036}, nil,
			"Ready=True/Running Progressing=False/UpToDate Degraded=False/NoProblem"},
		{"no pod yet", observed{}, nil,
			"Ready=False/PodPending Progressing=True/PodPending Degraded=False/NoProblem"},
		{"pod pending", observed{pod: pod(corev1.PodPending, false, "")}, nil,
			"Ready=False/PodPending Progressing=True/PodPending Degraded=False/NoProblem"},
		{"pod not ready", observed{pod: pod(corev1.PodRunning, false, "")}, nil,
			"Ready=False/PodNotReady Progressing=True/PodNotReady Degraded=False/NoProblem"},
		{"pod terminating", observed{pod: terminating, nodePort: 30036}, nil,
			"Ready=False/PodTerminating Progressing=True/PodTerminating Degraded=False/NoProblem"},
		{"no NodePort yet", observed{pod: running}, nil,
			"Ready=False/NodePortPending Progressing=True/NodePortPending Degraded=False/NoProblem"},
		{"an image that never pulls", observed{pod: pod(corev1.PodPending, false, "ImagePullBackOff")}, nil,
			"Ready=False/ImagePullBackOff Progressing=False/ImagePullBackOff Degraded=True/ImagePullBackOff"},
		{"a missing Secret", observed{}, conditions.Block(secrets.ReasonSecretNotFound, "Secret creds not found"),
			"Ready=False/SecretNotFound Progressing=False/SecretNotFound Degraded=True/SecretNotFound"},
		{"an API error leaves the status", observed{}, fmt.Errorf("connection refused"),
			"Ready=True/Running Progressing=False/UpToDate Degraded=False/NoProblem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Name: "db", Generation: 1}, Spec: dbv1.DatabaseSpec{Type: "mysql"}}
			summarize(db, observed{pod: running, nodePort: 30036}, nil)
			summarize(db, tt.o, tt.err)
			if got := testenv.Triple(db.Status.Conditions); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
