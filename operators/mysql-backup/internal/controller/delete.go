package controller

import (
	"context"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/conditions"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
	"github.com/operator-workshops/workshop/operators/mysql-backup/internal/scripts"
)

// finalize backs the database up before the MySQL and its server go. The
// finalizer holds the MySQL until the backup Job succeeded; the server, its
// volume, its Service and its credentials have no owner reference, so the
// garbage collector leaves them alone in every propagation mode (foreground
// deletion would otherwise delete them at once). Once the backup is done,
// or skipped, the operator deletes them itself, and the MySQL may go. The
// Job's events bring us back, no polling.
func (r *MySQLReconciler) finalize(ctx context.Context, m *mysqlv1.MySQL) (observed, bool, error) {
	var o observed
	done, err := r.backupBeforeDelete(ctx, m, &o)
	if err != nil || !done {
		return o, false, err
	}
	return o, true, r.deleteKept(ctx, m)
}

// summarizeDelete sets the conditions of a MySQL being deleted: what the
// pass found of its backup (o.reports), then Ready, Progressing and
// Degraded: it serves no more clients, whatever its server does.
func summarizeDelete(m *mysqlv1.MySQL, o observed, err error) {
	setReports(m, o)
	setCondition(m, conditions.Ready, metav1.ConditionFalse, ReasonDeleting, fmt.Sprintf("%s is being deleted", m.Name))
	reason, msg, blocked, reported := conditions.Reported(err)
	switch {
	case blocked:
		setCondition(m, conditions.Progressing, metav1.ConditionFalse, reason, "waiting for a person to act: see Degraded")
		setCondition(m, conditions.Degraded, metav1.ConditionTrue, reason, msg)
		return
	case reported:
		setCondition(m, conditions.Progressing, metav1.ConditionTrue, reason, msg)
	default:
		setCondition(m, conditions.Progressing, metav1.ConditionTrue, ReasonDeleting, "deleting the server, its volume, its Service and its credentials")
	}
	setCondition(m, conditions.Degraded, metav1.ConditionFalse, ReasonDeleting, "no problem found")
}

// backupBeforeDelete returns true once the deletion may go on.
func (r *MySQLReconciler) backupBeforeDelete(ctx context.Context, m *mysqlv1.MySQL, o *observed) (bool, error) {
	name := backupJobName(m.Name)
	if m.Annotations[mysqlv1.SkipBackupAnnotation] == "true" {
		r.skipBackup(m, o, ReasonBackupSkipped, fmt.Sprintf("deleted without a backup, as the %s annotation asks", mysqlv1.SkipBackupAnnotation))
		return true, nil
	}
	j := &batchv1.Job{}
	err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, j)
	if apierrors.IsNotFound(err) {
		return r.startBackup(ctx, m, o)
	}
	if err != nil {
		return false, err
	}

	if j.Annotations[uidAnnotation] != string(m.UID) {
		// A Job of an earlier MySQL of the same name, kept so that
		// `kubectl get jobs` shows it, as the homework does.
		if stateOf(j) == jobSucceeded {
			return false, errors.Join(r.deleteJob(ctx, j),
				backingUp(o, "removing the succeeded %s of an earlier MySQL named %s", name, m.Name))
		}
		msg := fmt.Sprintf("%s of an earlier MySQL named %s did not succeed: read `kubectl logs job/%s`, then delete it", name, m.Name, name)
		o.report(BackupSucceeded, metav1.ConditionFalse, ReasonPreviousJob, msg)
		return false, conditions.Block(ReasonPreviousJob, "%s", msg)
	}

	switch stateOf(j) {
	case jobRunning:
		return false, backingUp(o, "%s is dumping %s to %s", name, m.Spec.Database, backupPVCName(m.Name))
	case jobFailed:
		msg := fmt.Sprintf("%s failed, so MySQL %s and its data stay. `kubectl logs job/%s` says why; "+
			"`kubectl delete job %s` runs the backup again; `kubectl annotate mysql %s %s=true` deletes without a backup",
			name, m.Name, name, name, m.Name, mysqlv1.SkipBackupAnnotation)
		if r.told.Once(m, "failed "+string(j.UID)) {
			r.Recorder.Eventf(m, j, corev1.EventTypeWarning, ReasonBackupFailed, "BackupJobFailed", "%s", msg)
		}
		o.report(BackupSucceeded, metav1.ConditionFalse, ReasonBackupFailed, msg)
		return false, conditions.Block(ReasonBackupFailed, "%s", msg)
	}

	report, err := r.report(ctx, j)
	if err != nil {
		return false, err
	}
	m.Status.LastBackupTime = j.Status.CompletionTime
	m.Status.LastBackup = backupPVCName(m.Name)
	reason, msg := ReasonBackupDone, ""
	switch res, _ := scripts.ParseResult(report); res.Outcome {
	case scripts.BackedUp:
		m.Status.LastBackup += "/" + res.Dump
		msg = "backed up to " + m.Status.LastBackup
	case scripts.BackedUpAside:
		m.Status.LastBackup += "/" + res.Dump
		reason = ReasonBackupAside
		msg = fmt.Sprintf("backed up to %s, kept aside: latest still names the backup the next MySQL restores (see `kubectl logs job/%s`)", m.Status.LastBackup, name)
	default:
		// Succeeded, so the dump is written, but which file it is and
		// whether it became latest are not known without the report.
		reason = ReasonBackupUnreported
		msg = fmt.Sprintf("%s succeeded without a report (its pod's termination message is empty): backed up to %s, under a name not known", name, m.Status.LastBackup)
	}
	o.report(BackupSucceeded, metav1.ConditionTrue, reason, msg)
	m.Status.Message = "mysql and its children resources deleted"
	if r.told.Once(m, string(j.UID)) {
		r.Recorder.Eventf(m, j, corev1.EventTypeNormal, reason, "BackupJobDone", "%s; deleting the MySQL", msg)
	}
	return true, nil
}

// startBackup starts the backup Job, unless the server never started
// (there is nothing to back up). The dump becomes latest only if latest
// still names the dump the data volume was restored from (none, for a
// volume that restored none or whose restore is not known to have
// finished): so a server that never got its data back keeps the last good
// backup as latest, and the rows of one that had no backup to restore
// become the latest backup, however early they were written.
func (r *MySQLReconciler) startBackup(ctx context.Context, m *mysqlv1.MySQL, o *observed) (bool, error) {
	name := backupJobName(m.Name)
	pvc := &corev1.PersistentVolumeClaim{}
	err := apply.Get(ctx, r.Client, r.APIReader, client.ObjectKey{Namespace: m.Namespace, Name: dataPVCName(m.Name)}, pvc)
	if client.IgnoreNotFound(err) != nil {
		return false, err
	}
	if err != nil || !ours(pvc, m) {
		pvc = &corev1.PersistentVolumeClaim{}
	}
	never, err := r.neverStarted(ctx, m, pvc)
	if err != nil || never {
		if never {
			r.skipBackup(m, o, ReasonNothingToBackUp, "the server never started, so there is nothing to back up")
		}
		return never, err
	}
	from := marksOf(pvc).restoredFrom
	p := backupPlan{latestExpected: restoredNone}
	switch {
	case m.Annotations[mysqlv1.BackupAsLatestAnnotation] == "true":
		p.latestExpected = ""
	case from != "" && from == m.Annotations[mysqlv1.RestoreFromAnnotation]:
		// Restored from the dump a person chose: its backup is the new line.
		p.latestExpected = ""
	case from != "" && from != restoredNone && from != restoredUnknown:
		p.latestExpected = from
	}
	// The Job talks to the pod the operator's Deployment runs.
	pod, err := r.serverPod(ctx, m)
	if err != nil {
		return false, err
	}
	if pod != nil {
		p.host = pod.Status.PodIP
	}
	j := backupJob(m, r.jobOptions(), p)
	if err = r.ensureBackupPVC(ctx, m); err == nil && pod == nil {
		err = backingUp(o, "waiting for the server's pod to answer before starting %s "+
			"(if it never will: `kubectl annotate mysql %s %s=true` deletes the MySQL without a backup)", name, m.Name, mysqlv1.SkipBackupAnnotation)
	}
	if err != nil {
		if errors.As(err, new(*conditions.Blocked)) || errors.As(err, new(*conditions.Waiting)) {
			// A backup volume being deleted, or a server gone, is no
			// reason to wait when the namespace goes with them: ask the
			// API server, with a create that writes nothing.
			err = errors.Join(err, r.Create(ctx, j.DeepCopy(), client.DryRunAll))
		}
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// The whole namespace goes, the backup volume with it: there
			// is nowhere to keep a backup, and waiting would only hold
			// the namespace's deletion forever.
			r.skipBackup(m, o, ReasonBackupSkipped, fmt.Sprintf("namespace %s is being deleted with %s: no backup is possible", m.Namespace, backupPVCName(m.Name)))
			return true, nil
		}
		if b := new(conditions.Blocked); errors.As(err, &b) {
			o.report(BackupSucceeded, metav1.ConditionFalse, b.Reason, b.Message)
			return false, b
		}
		if w := new(conditions.Waiting); errors.As(err, &w) {
			return false, w
		}
		return false, err
	}
	created, err := owner.CreateOnce(ctx, r.Client, j)
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		r.skipBackup(m, o, ReasonBackupSkipped, fmt.Sprintf("namespace %s is being deleted with %s: no backup is possible", m.Namespace, backupPVCName(m.Name)))
		return true, nil
	case err != nil:
		return false, err
	case created:
		r.Recorder.Eventf(m, j, corev1.EventTypeNormal, ReasonBackingUp, "CreateBackupJob", "Started %s: the MySQL goes once it succeeded", name)
	}
	return false, backingUp(o, "%s is dumping %s to %s", name, m.Spec.Database, backupPVCName(m.Name))
}

// skipBackup records that m goes without a backup, and why.
func (r *MySQLReconciler) skipBackup(m *mysqlv1.MySQL, o *observed, reason, msg string) {
	if r.told.Once(m, "skipped "+reason) {
		r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, reason, "SkipBackup", "%s", msg)
	}
	o.report(BackupSucceeded, metav1.ConditionFalse, reason, msg)
}

// neverStarted reports whether m's server never ran, so that its data
// volume holds nothing to back up: the volume (pvc, empty when there is
// none of m's) was never bound, or no server's container ever started on
// it: it is not marked started or restored, and every pod of the server
// still waits for its container's first start (a pod that cannot start,
// say for a missing Secret key). A bound volume without a pod may hold
// rows: it is backed up.
func (r *MySQLReconciler) neverStarted(ctx context.Context, m *mysqlv1.MySQL, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	if pvc.UID == "" || pvc.Status.Phase != corev1.ClaimBound {
		return true, nil
	}
	if mk := marksOf(pvc); mk.started || mk.restoredFrom != "" {
		return false, nil
	}
	server, err := r.serverPods(ctx, m)
	if err != nil || len(server) == 0 {
		return false, err
	}
	return !anyStarted(server), nil
}

// anyStarted reports whether a container of one of the pods has started.
func anyStarted(server []*corev1.Pod) bool {
	for _, p := range server {
		if p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
			return true
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Waiting == nil || s.RestartCount > 0 || s.LastTerminationState.Terminated != nil {
				return true
			}
		}
	}
	return false
}

func backingUp(o *observed, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	o.report(BackupSucceeded, metav1.ConditionUnknown, ReasonBackingUp, msg)
	return conditions.Wait(ReasonBackingUp, "%s", msg)
}
