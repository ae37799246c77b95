package controller

import (
	"context"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/manager"
	"github.com/operator-workshops/workshop/operators/common/pods"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
	"github.com/operator-workshops/workshop/operators/mysql-backup/internal/scripts"
)

// jobState is where a Job is in its life.
type jobState int

const (
	jobRunning jobState = iota
	jobSucceeded
	jobFailed
)

func stateOf(j *batchv1.Job) jobState {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return jobSucceeded
		case batchv1.JobFailed:
			return jobFailed
		}
	}
	return jobRunning
}

// report returns what the Job's last pod wrote to its termination log: the
// scripts write one line there (see scripts.ParseResult). It is empty when
// no pod reported, as on a cluster whose pods are simulated.
func (r *MySQLReconciler) report(ctx context.Context, j *batchv1.Job) (string, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, manager.ControlledBy(j)); err != nil {
		return "", err
	}
	return newestReport(pods.Items, j), nil
}

// failure is what Job j's newest pod said of its failure (its script's
// "failed: REASON"), as ": REASON", or "" when it said nothing.
func (r *MySQLReconciler) failure(ctx context.Context, j *batchv1.Job) (string, error) {
	report, err := r.report(ctx, j)
	if err != nil {
		return "", err
	}
	if res, err := scripts.ParseResult(report); err == nil && res.Outcome == scripts.Failed && res.Reason != "" {
		return ": " + res.Reason, nil
	}
	return "", nil
}

// liveReport is report read from the API server: the cache may show the
// Job done before it shows its pod's end, and a backup that counts without
// its report would count unchecked.
func (r *MySQLReconciler) liveReport(ctx context.Context, j *batchv1.Job) (string, error) {
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(j.Namespace), client.MatchingLabels{batchv1.JobNameLabel: j.Name}); err != nil {
		return "", err
	}
	return newestReport(pods.Items, j), nil
}

// newestReport is the termination message of the newest of pods that j
// controls ("" for none).
func newestReport(pods []corev1.Pod, j *batchv1.Job) string {
	msg := ""
	var newest *corev1.Pod
	for i := range pods {
		// Only j's own: a pod of an earlier Job of the same name is not
		// one.
		p := &pods[i]
		if !metav1.IsControlledBy(p, j) {
			continue
		}
		if newest == nil || newest.CreationTimestamp.Before(&p.CreationTimestamp) {
			newest = p
		}
	}
	if newest != nil {
		for _, cs := range newest.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil {
				msg = strings.TrimSpace(t.Message)
			}
		}
	}
	return msg
}

func (r *MySQLReconciler) jobOptions() jobOptions {
	o := jobOptions{deadline: r.JobDeadline, requests: r.JobRequests}
	if o.deadline <= 0 {
		o.deadline = DefaultJobDeadline
	}
	return o
}

// jobOptions are the operator's settings that every Job of a MySQL gets.
type jobOptions struct {
	// deadline is how long the Job may run (JobDeadline).
	deadline time.Duration
	// requests are what its pod requests of its node (JobRequests).
	requests pods.Requests
}

// startJob creates j, a Job of m's, unless one of its name exists, and
// tells its start with an event of reason, action and note.
func (r *MySQLReconciler) startJob(ctx context.Context, m *mysqlv1.MySQL, j *batchv1.Job, reason, action, note string) error {
	if err := controllerutil.SetControllerReference(m, j, r.Scheme()); err != nil {
		return err
	}
	created, err := r.createJob(ctx, m, j)
	if err == nil && created {
		r.Recorder.Eventf(m, j, corev1.EventTypeNormal, reason, action, "%s", note)
	}
	return err
}

// createJob creates j, a Job of m's, unless one of its name exists, and
// reports whether it created it. One that exists is read, from the API
// server when the cache misses it (a Job without the operator's label), and
// is earlierJob's unless it is m's: never taken for m's by its name alone.
func (r *MySQLReconciler) createJob(ctx context.Context, m *mysqlv1.MySQL, j *batchv1.Job) (bool, error) {
	existing := &batchv1.Job{}
	created, err := owner.CreateIfAbsent(ctx, r.Client, r.APIReader, j, existing)
	if err != nil || created || ours(existing, m) {
		return created, err
	}
	return false, r.earlierJob(ctx, m, existing)
}

// earlierJob handles j, a Job of one of m's names that m did not make. One
// an earlier MySQL of m's name made (its controller is a MySQL of that name
// with another UID) has lost its owner: m holds the name, so the earlier
// MySQL is gone. The operator deletes it, as the garbage collector would in
// its own time (minutes, when the controller manager has just restarted),
// and m's work waits until it has gone. Any other is someone else's: a
// NameConflict, left as it is.
func (r *MySQLReconciler) earlierJob(ctx context.Context, m *mysqlv1.MySQL, j *batchv1.Job) error {
	ref := metav1.GetControllerOfNoCopy(j)
	if ref == nil || !earlierOwner(*ref, m) {
		return conditions.NameConflict("Job", j.Name, "MySQL", m.Name)
	}
	if j.DeletionTimestamp.IsZero() {
		if err := r.deleteJob(ctx, j); err != nil {
			return err
		}
		r.Recorder.Eventf(m, j, corev1.EventTypeNormal, ReasonPreviousJob, "DeleteEarlierJob",
			"Deleted %s, left by an earlier MySQL named %s", j.Name, m.Name)
	}
	return conditions.Wait(ReasonPreviousJob, "%s of an earlier MySQL named %s is being deleted", j.Name, m.Name)
}

// earlierOwner reports whether ref names an earlier MySQL of m's name (of
// any version of the API).
func earlierOwner(ref metav1.OwnerReference, m *mysqlv1.MySQL) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == mysqlv1.GroupVersion.Group && ref.Kind == "MySQL" && ref.Name == m.Name && ref.UID != m.UID
}
