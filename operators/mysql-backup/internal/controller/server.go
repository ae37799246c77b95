package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/manager"
	"github.com/operator-workshops/workshop/operators/common/pods"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
)

// markServing labels the server's pods for its Service (servingLabel) once
// the restore is done, and takes the label off any that wears it before
// (a new data volume waits for its restore; a person's label): a merge
// patch of the pod's labels, addressed by its UID, to the pods of the
// server's own ReplicaSets (serverPods). A pod replaced later, when the
// password changes or its node goes, is labelled as it appears: its data
// is on the restored volume.
func (r *MySQLReconciler) markServing(ctx context.Context, m *mysqlv1.MySQL, restored bool) error {
	server, err := r.serverPods(ctx, m)
	if err != nil {
		return err
	}
	var value any // null: the label goes
	if restored {
		value = "true"
	}
	for _, p := range server {
		if (p.Labels[servingLabel] == "true") == restored {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid": p.UID, "labels": map[string]any{servingLabel: value}}})
		if err != nil {
			return err
		}
		// The UID makes the patch fail on another pod of the same name
		// (a UID cannot change); a pod gone meanwhile needs no label.
		if err := r.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("labelling the server's pod %s for its Service: %w", p.Name, err)
		}
	}
	return nil
}

// claimDeployment checks the Deployment is m's, and returns it as the cache
// has it, empty when there is none; one being deleted is waited for.
func (r *MySQLReconciler) claimDeployment(ctx context.Context, m *mysqlv1.MySQL) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace}}
	if _, err := r.claim(ctx, m, d); err != nil {
		return nil, err
	}
	if !d.DeletionTimestamp.IsZero() {
		return nil, conditions.Wait(ReasonReplacing, "waiting for the deleted Deployment %s to go", d.Name)
	}
	return d, nil
}

// admitted marks dep with the hash of its pod template and, when that is
// not the template live runs, asks the API server first whether it would
// admit a pod of it: Recreate deletes the running server before it creates
// the new one, and a pod refused then (Pod Security, a policy, a webhook)
// would leave no server. A refusal leaves the Deployment as it is. A first
// Deployment has no server to keep, and is not asked for: a pod of it
// refused is told by its ReplicaFailure condition (refusedServer).
func (r *MySQLReconciler) admitted(ctx context.Context, m *mysqlv1.MySQL, dep *appsv1ac.DeploymentApplyConfiguration, live *appsv1.Deployment) error {
	hash := apply.SpecHash(dep.Spec.Template)
	dep.WithAnnotations(map[string]string{templateAnnotation: hash})
	if live.UID == "" || live.Annotations[templateAnnotation] == hash {
		return nil
	}
	return pods.Admitted(ctx, r.Client, m.Namespace, m.Name+"-", dep.Spec.Template)
}

// refusedServer is a *conditions.Blocked when the cluster refuses to create
// the server's pod, whatever the template's age (a policy, Pod Security, a
// quota or a webhook the pod meets when its Deployment is first made, or
// when a node's loss or a person's delete makes it create the pod again):
// the ReplicaFailure condition kube-controller-manager puts on d, with the
// API server's message. A condition of a template d's controller has not
// seen yet says nothing of it. The spec was carried out (d is applied), as
// when the kubelet cannot run the pod (stuckServer): its generation is
// observed, and Degraded says what a person must change.
func refusedServer(d *appsv1.Deployment) error {
	if d.Generation == 0 || d.Status.ObservedGeneration < d.Generation {
		return nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return &conditions.Blocked{Reason: conditions.ReasonRefused,
				Message: fmt.Sprintf("the cluster refuses to create the server's pod (%s): %s", c.Reason, c.Message)}
		}
	}
	return nil
}

// answered is the Deployment an apply answered with.
func answered(dep *appsv1ac.DeploymentApplyConfiguration) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	return d, apply.Decode(dep, d)
}

// rolledOut reports whether a Deployment of one replica runs the current
// template and its pod is available.
func rolledOut(d *appsv1.Deployment) bool {
	s := d.Status
	return d.Generation > 0 && s.ObservedGeneration >= d.Generation &&
		s.UpdatedReplicas == 1 && s.AvailableReplicas == 1 && s.Replicas == 1
}

// serverPod returns m's server pod whose container answers (its readiness
// probe, mysqladmin ping, passes), nil when there is none: what a backup
// and a password change talk to.
func (r *MySQLReconciler) serverPod(ctx context.Context, m *mysqlv1.MySQL) (*corev1.Pod, error) {
	return r.firstServerPod(ctx, m, answers)
}

// answers reports whether server pod p's container answers its readiness
// probe.
func answers(p *corev1.Pod) bool {
	return runs(p) && pods.Condition(p, corev1.ContainersReady)
}

// runs reports whether server pod p runs and has an address, ready or not:
// what a restore talks to. The restore is the one Job that runs before the
// server ever served, and it waits for the server itself (WAIT_TIMEOUT),
// so it starts as soon as there is an address to wait on. A server that
// refuses the Job's host (a data directory whose first initialisation was
// killed keeps root for localhost only) fails its readiness probe too:
// waiting for readiness, the restore that names the cause in the server's
// words would never start, and Degraded would only say, minutes later,
// that the server is not ready.
func runs(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != ""
}

// firstServerPod returns the first of m's server pods for which want
// holds, nil when there is none.
func (r *MySQLReconciler) firstServerPod(ctx context.Context, m *mysqlv1.MySQL, want func(*corev1.Pod) bool) (*corev1.Pod, error) {
	server, err := r.serverPods(ctx, m)
	if err != nil {
		return nil, err
	}
	for _, p := range server {
		if want(p) {
			return p, nil
		}
	}
	return nil, nil
}

// replacedServer returns m's server pod for which want holds (the pods
// Job j may talk to) when it is not the one j was made for
// (serverPodAnnotation), nil otherwise: j talks to an address that is gone.
func (r *MySQLReconciler) replacedServer(ctx context.Context, m *mysqlv1.MySQL, j *batchv1.Job, want func(*corev1.Pod) bool) (*corev1.Pod, error) {
	target := j.Annotations[serverPodAnnotation]
	if target == "" {
		return nil, nil
	}
	pod, err := r.firstServerPod(ctx, m, want)
	if err != nil || pod == nil || string(pod.UID) == target {
		return nil, err
	}
	return pod, nil
}

// followServer deletes Job j when the server pod of m it was made for has
// been replaced by one for which want holds (replacedServer: j talks to an
// address that is gone), with an event (reason, action) saying so, and
// returns what it said, "" when j's pod still serves. what is what j does
// to the pod ("dumps from"), then what happens next; the caller's next pass
// starts j again against the new pod.
func (r *MySQLReconciler) followServer(ctx context.Context, m *mysqlv1.MySQL, j *batchv1.Job, want func(*corev1.Pod) bool, reason, action, what, then string) (string, error) {
	pod, err := r.replacedServer(ctx, m, j, want)
	if err != nil || pod == nil {
		return "", err
	}
	if err := r.deleteJob(ctx, j); err != nil {
		return "", err
	}
	msg := fmt.Sprintf("the server pod %s %s was replaced by %s: %s", j.Name, what, pod.Name, then)
	r.Recorder.Eventf(m, j, corev1.EventTypeNormal, reason, action, "%s", msg)
	return msg, nil
}

// stuckServer returns a Blocked error when a pod of m's server cannot run
// (pods.Stuck: the kubelet's reason) or, when probed, has run without being
// ready for serverReadyLimit, nil otherwise (and o.recheck for the limit).
// data is m's data volume, restored whether a restore ever finished on it.
func (r *MySQLReconciler) stuckServer(ctx context.Context, m *mysqlv1.MySQL, data *corev1.PersistentVolumeClaim, restored, probed bool, o *observed) error {
	server, err := r.serverPods(ctx, m)
	if err != nil {
		return err
	}
	// No restore finished on the volume, so the Service never sent a
	// client to it (markServing): what it holds was written by kubectl
	// exec, if anything.
	advice := ""
	if !restored {
		advice = ". " + brokenVolumeAdvice(data.Name)
	}
	for _, p := range server {
		if reason, message, stuck := pods.Stuck(p); stuck {
			return conditions.Block(reason, "the server cannot run: %s: `kubectl logs %s` says why%s", message, p.Name, advice)
		}
		since, notReady := pods.NotReadySince(p)
		if !probed || !notReady {
			continue
		}
		if left := serverReadyLimit - time.Since(since); left > 0 {
			o.recheck = left + time.Second
			continue
		}
		return &conditions.Blocked{Reason: ReasonServerNotReady, Recheck: 30 * time.Second, Message: fmt.Sprintf(
			"the server's pod %s has run for %s without being ready (its readiness probe fails): `kubectl logs %s` says why%s",
			p.Name, time.Since(since).Round(time.Second), p.Name, advice)}
	}
	return nil
}

// brokenVolumeAdvice is the way out of a data volume named data on which
// no restore finished, so that no client reached its server through the
// Service: a data directory whose first initialisation was killed (a server
// pod force-deleted then lets two servers initialise it at once) never
// serves, and deleting the volume loses nothing a backup would keep
// (releaseDataVolume lets it go).
func brokenVolumeAdvice(data string) string {
	return fmt.Sprintf("No restore finished on its data volume %s, so no client reached this server through the Service. "+
		"If the data directory is broken (its first initialisation was killed: the server's log says so, or the server refuses "+
		"root from other hosts), delete the volume, `kubectl delete pvc %s`: a new one is made and restored from the latest backup; "+
		"only rows written with kubectl exec since the volume was made would go with it", data, data)
}

// serverPods returns the pods of m's server that are not being deleted:
// the pods of the ReplicaSets of m's Deployment, by their owner references'
// UIDs. A pod that only wears the server's labels is not one: no dump is
// ever sent to it or taken from it.
func (r *MySQLReconciler) serverPods(ctx context.Context, m *mysqlv1.MySQL) ([]*corev1.Pod, error) {
	d := &appsv1.Deployment{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, d); err != nil || !ours(d, m) {
		return nil, client.IgnoreNotFound(err)
	}
	var sets appsv1.ReplicaSetList
	if err := r.List(ctx, &sets, manager.ControlledBy(d)); err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for i := range sets.Items {
		var list corev1.PodList
		if err := r.List(ctx, &list, manager.ControlledBy(&sets.Items[i])); err != nil {
			return nil, err
		}
		for j := range list.Items {
			if p := &list.Items[j]; p.DeletionTimestamp.IsZero() {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// serverStarting says the restore waits for the server to answer: one
// message while its volume binds and its pod starts, so that the status is
// written once for the wait, not once per step of it.
func serverStarting(m *mysqlv1.MySQL, o *observed) error {
	return restoring(o, ReasonServerStarting, "starting the server; then %s loads the latest backup, if any", restoreJobName(m.Name))
}
