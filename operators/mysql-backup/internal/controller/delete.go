package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/finalizers"
	"github.com/operator-workshops/workshop/operators/common/status"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
	"github.com/operator-workshops/workshop/operators/mysql-backup/internal/scripts"
)

// reconcileDelete backs the database up before the MySQL and its server go.
// The finalizer holds the MySQL, and with it the server and its volume, until
// the backup Job succeeded; the Job's events bring us back, no polling.
func (r *MySQLReconciler) reconcileDelete(ctx context.Context, m *mysqlv1.MySQL) error {
	if !controllerutil.ContainsFinalizer(m, finalizer) {
		return nil
	}
	before := m.DeepCopy()
	done, err := r.backupBeforeDelete(ctx, m)
	if perr := status.PatchIfChanged(ctx, r.Client, before, m); perr != nil && !apierrors.IsNotFound(perr) {
		err = errors.Join(err, perr)
	}
	if err != nil || !done {
		return err
	}
	return finalizers.Remove(ctx, r.Client, m, finalizer)
}

// backupBeforeDelete returns true once the deletion may go on.
func (r *MySQLReconciler) backupBeforeDelete(ctx context.Context, m *mysqlv1.MySQL) (bool, error) {
	name := backupJobName(m.Name)
	if m.Annotations[mysqlv1.SkipBackupAnnotation] == "true" {
		r.skipBackup(m, fmt.Sprintf("deleted without a backup, as the %s annotation asks", mysqlv1.SkipBackupAnnotation))
		return true, nil
	}
	j := backupJob(m, r.deadline())
	err := r.Get(ctx, client.ObjectKeyFromObject(j), j)
	if apierrors.IsNotFound(err) {
		err = r.ensureBackupPVC(ctx, m)
		if err == nil {
			j = backupJob(m, r.deadline())
			err = r.Create(ctx, j, client.FieldOwner(FieldOwner))
		}
		switch {
		case apierrors.IsAlreadyExists(err):
			return false, nil // created by an earlier reconcile; the cache will show it
		case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			// The whole namespace goes, the backup volume with it: there is
			// nowhere to keep a backup, and waiting would only hold the
			// namespace's deletion forever.
			r.skipBackup(m, fmt.Sprintf("namespace %s is being deleted with %s: no backup is possible", m.Namespace, backupPVCName(m.Name)))
			return true, nil
		case err != nil:
			return false, err
		}
		r.Recorder.Eventf(m, j, corev1.EventTypeNormal, ReasonBackingUp, "CreateBackupJob", "Started %s: the MySQL goes once it succeeded", name)
		setBackingUp(m, fmt.Sprintf("%s is dumping %s to %s", name, m.Spec.Database, backupPVCName(m.Name)))
		return false, nil
	}
	if err != nil {
		return false, err
	}

	if j.Annotations[uidAnnotation] != string(m.UID) {
		// A Job of an earlier MySQL of the same name, kept so that
		// `kubectl get jobs` shows it, as the homework does.
		if stateOf(j) == jobSucceeded {
			setBackingUp(m, fmt.Sprintf("removing the succeeded %s of an earlier MySQL named %s", name, m.Name))
			return false, r.deleteJob(ctx, j)
		}
		msg := fmt.Sprintf("%s of an earlier MySQL named %s did not succeed: read `kubectl logs job/%s`, then delete it", name, m.Name, name)
		setCondition(m, BackupSucceeded, metav1.ConditionFalse, ReasonPreviousJob, msg)
		return false, nil
	}

	switch stateOf(j) {
	case jobRunning:
		setBackingUp(m, fmt.Sprintf("%s is dumping %s to %s", name, m.Spec.Database, backupPVCName(m.Name)))
		return false, nil
	case jobFailed:
		msg := fmt.Sprintf("%s failed, so MySQL %s and its data stay. `kubectl logs job/%s` says why; "+
			"`kubectl delete job %s` runs the backup again; `kubectl annotate mysql %s %s=true` deletes without a backup",
			name, m.Name, name, name, m.Name, mysqlv1.SkipBackupAnnotation)
		if c := meta.FindStatusCondition(m.Status.Conditions, BackupSucceeded); c == nil || c.Reason != ReasonBackupFailed {
			r.Recorder.Eventf(m, j, corev1.EventTypeWarning, ReasonBackupFailed, "BackupJobFailed", "%s", msg)
		}
		setCondition(m, BackupSucceeded, metav1.ConditionFalse, ReasonBackupFailed, msg)
		setCondition(m, conditions.Degraded, metav1.ConditionTrue, ReasonBackupFailed, msg)
		return false, nil
	}

	report, err := r.report(ctx, j)
	if err != nil {
		return false, err
	}
	m.Status.LastBackupTime = j.Status.CompletionTime
	m.Status.LastBackup = backupPVCName(m.Name)
	if res, _ := scripts.ParseResult(report); res.Outcome == scripts.BackedUp {
		m.Status.LastBackup += "/" + res.Dump
	}
	setCondition(m, BackupSucceeded, metav1.ConditionTrue, ReasonBackupDone, "backed up to "+m.Status.LastBackup)
	m.Status.Message = "mysql and its children resources deleted"
	r.Recorder.Eventf(m, j, corev1.EventTypeNormal, ReasonBackupDone, "BackupJobDone", "Backed up to %s; deleting the MySQL", m.Status.LastBackup)
	return true, nil
}

// skipBackup records that m goes without a backup, and why.
func (r *MySQLReconciler) skipBackup(m *mysqlv1.MySQL, msg string) {
	setCondition(m, BackupSucceeded, metav1.ConditionFalse, ReasonBackupSkipped, msg)
	r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, ReasonBackupSkipped, "SkipBackup", "%s", msg)
}

func setBackingUp(m *mysqlv1.MySQL, msg string) {
	setCondition(m, BackupSucceeded, metav1.ConditionUnknown, ReasonBackingUp, msg)
	setCondition(m, conditions.Progressing, metav1.ConditionTrue, ReasonBackingUp, msg)
}
