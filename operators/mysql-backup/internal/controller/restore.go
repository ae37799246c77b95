package controller

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
	"github.com/operator-workshops/workshop/operators/mysql-backup/internal/scripts"
)

// reconcileRestore runs the restore Job once per data volume, once the new
// server's pod runs (runs), and returns what the volume was restored from
// once the restore is done ("" until then). What the volume needs comes from the
// volume (restoredAnnotation) and from the Job the operator made for it,
// never from the MySQL's status.
func (r *MySQLReconciler) reconcileRestore(ctx context.Context, m *mysqlv1.MySQL, pvc *corev1.PersistentVolumeClaim, o *observed) (string, error) {
	from := pvc.Annotations[restoredAnnotation]
	if pvc.UID == "" {
		return "", serverStarting(m, o)
	}
	name := restoreJobName(m.Name)
	j := &batchv1.Job{}
	err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, j)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return from, err
	case from != "" && (err != nil || !ours(j, m) || stateOf(j) != jobSucceeded ||
		j.Annotations[dataVolumeAnnotation] != string(pvc.UID)):
		// Done, and the Job that did it is gone or not this volume's.
		reportRestored(m, o, from, nil)
		return from, nil
	case err != nil:
		return "", r.startRestore(ctx, m, pvc, o)
	case !ours(j, m):
		return "", inTheWay(o, r.earlierJob(ctx, m, j))
	case !j.DeletionTimestamp.IsZero():
		return "", restoring(o, ReasonRestoring, "waiting for the previous %s to go before restoring again", name)
	case j.Annotations[dataVolumeAnnotation] != "" && j.Annotations[dataVolumeAnnotation] != string(pvc.UID):
		return "", r.restoreAgain(ctx, m, o, j, fmt.Sprintf(
			"the data volume %s was replaced after %s restored it (what was written since the last backup went with the old one): "+
				"restoring the latest backup into the new volume", pvc.Name, name))
	}
	if stateOf(j) != jobSucceeded {
		// A Job whose server pod was replaced (it waits in vain for the
		// old address, or lost it mid-stream) starts again against the
		// new one: the load is idempotent, and its RESTORE_ID stays.
		msg, err := r.followServer(ctx, m, j, runs, ReasonRestoring, "RestoreAgain", "loads into", "restoring into the new pod")
		if err != nil {
			return "", err
		}
		if msg != "" {
			return "", restoring(o, ReasonRestoring, "%s", msg)
		}
	}
	switch stateOf(j) {
	case jobRunning:
		return "", restoring(o, ReasonRestoring, "%s is loading the latest backup, if any", name)
	case jobFailed:
		said, err := r.failure(ctx, j)
		if err != nil {
			return "", err
		}
		if !pvc.DeletionTimestamp.IsZero() {
			// Its way out, taken: the next volume is restored again.
			return "", restoring(o, ReasonDataVolumeDeleted, "%s failed%s, and the data volume %s is being deleted: "+
				"once it is gone, a new one is made and restored from the latest backup", name, said, pvc.Name)
		}
		msg := fmt.Sprintf("%s failed%s; `kubectl logs job/%s` says more, and deleting the Job tries again. "+
			"No client reaches the server meanwhile. %s", name, said, name, brokenVolumeAdvice(pvc.Name))
		o.report(Restored, metav1.ConditionFalse, ReasonRestoreFailed, msg)
		return "", conditions.Block(ReasonRestoreFailed, "%s", msg)
	}
	report, err := r.report(ctx, j)
	if err != nil {
		return "", err
	}
	res, err := scripts.ParseResult(report)
	if err != nil {
		res = scripts.Result{FreeBytes: -1, DumpBytes: -1}
	}
	switch res.Outcome {
	case scripts.NoBackup:
		from = restoredNone
	case scripts.Restored:
		from = res.Dump
	default:
		// The script exits 0 only once it loaded the latest backup or found
		// none, so the server may serve; but without its report (a pod that
		// ran no script, as on kwok's fake nodes, leaves none) nobody knows
		// which it was, and the status does not pretend to.
		from = restoredUnknown
	}
	reportRestored(m, o, from, &res)
	o.measured = measuredRoom(&res)
	if r.told.Once(m, string(j.UID)) {
		r.Recorder.Eventf(m, j, corev1.EventTypeNormal, "Restored", "RestoreJobDone", "%s", o.restore.message)
	}
	return from, nil
}

// reportRestored sets the Restored condition, the message and restoredFrom
// for a data volume restored from from, with the restore Job's report when
// there is one (it names a dump kept aside).
func reportRestored(m *mysqlv1.MySQL, o *observed, from string, res *scripts.Result) {
	name := restoreJobName(m.Name)
	aside := ""
	if res != nil && res.Aside != "" {
		aside = fmt.Sprintf("%s on %s was kept aside (see the last MySQL's BackupSucceeded condition or events); "+
			"to load it instead, delete this MySQL and create it again with the annotation %s=%s",
			res.Aside, backupPVCName(m.Name), mysqlv1.RestoreFromAnnotation, res.Aside)
	}
	switch from {
	case restoredNone:
		if aside != "" {
			o.report(Restored, metav1.ConditionTrue, ReasonNoLatest, "no backup is marked latest, so none was restored; the dump "+aside)
			o.restore = &restoreReport{message: fmt.Sprintf("%s created without restore-job: no backup is marked latest, but a dump kept aside exists (%s)", m.Name, res.Aside)}
			return
		}
		o.report(Restored, metav1.ConditionTrue, ReasonNoBackup, "there was no backup to restore")
		o.restore = &restoreReport{message: fmt.Sprintf("%s created without restore-job: there was no backup to restore", m.Name)}
	case restoredUnknown:
		o.report(Restored, metav1.ConditionTrue, ReasonRestoreUnreported,
			fmt.Sprintf("%s succeeded without a report (its pod's termination message is empty): what it loaded is not known", name))
		o.restore = &restoreReport{message: fmt.Sprintf("%s created with restore-job, which did not report what it loaded", m.Name)}
	default:
		msg := fmt.Sprintf("%s restored %s", name, from)
		if aside != "" {
			msg += "; a newer dump, " + aside
		}
		o.report(Restored, metav1.ConditionTrue, ReasonRestored, msg)
		o.restore = &restoreReport{from: from, message: fmt.Sprintf("%s created with restore-job", m.Name)}
	}
}

// restoreAgain deletes m's restore Job j, which restored a data volume
// that was replaced since, so that the next pass restores into the new
// one, and warns why.
func (r *MySQLReconciler) restoreAgain(ctx context.Context, m *mysqlv1.MySQL, o *observed, j *batchv1.Job, msg string) error {
	if err := r.deleteJob(ctx, j); err != nil {
		return err
	}
	r.Recorder.Eventf(m, j, corev1.EventTypeWarning, ReasonDataVolumeReplaced, "RestoreAgain", "%s", msg)
	return restoring(o, ReasonDataVolumeReplaced, "%s", msg)
}

// startRestore starts the restore Job of data volume pvc once the server's
// pod runs (runs: the Job waits for the server to answer).
func (r *MySQLReconciler) startRestore(ctx context.Context, m *mysqlv1.MySQL, pvc *corev1.PersistentVolumeClaim, o *observed) error {
	name := restoreJobName(m.Name)
	pod, err := r.firstServerPod(ctx, m, runs)
	if err != nil {
		return err
	}
	if pod == nil {
		return serverStarting(m, o)
	}
	j := restoreJob(m, r.jobOptions(), pod, pvc.UID)
	if err := r.startJob(ctx, m, j, ReasonRestoring, "CreateRestoreJob", "Started "+name+" to load the latest backup, if any"); err != nil {
		return inTheWay(o, err)
	}
	return restoring(o, ReasonRestoring, "%s is loading the latest backup, if any", name)
}

// inTheWay returns err, a Job in the restore's way (earlierJob) or an API
// error, and says the first in the Restored condition.
func inTheWay(o *observed, err error) error {
	if reason, msg, _, ok := conditions.Reported(err); ok {
		o.report(Restored, metav1.ConditionUnknown, reason, msg)
	}
	return err
}

func restoring(o *observed, reason, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	o.report(Restored, metav1.ConditionUnknown, reason, msg)
	return conditions.Wait(reason, "%s", msg)
}
