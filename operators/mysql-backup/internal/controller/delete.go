package controller

import (
	"context"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	if err := r.deleteKept(ctx, m); err != nil {
		return o, true, err
	}
	// The verify Job's work is done: `kubectl get jobs` shows the backup
	// Job, as the homework does, and no other. It goes last, so that a
	// pass that comes back after a failure here does not check again.
	return o, true, r.deleteVerifyJob(ctx, m)
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

	if stateOf(j) != jobSucceeded {
		// A server pod replaced under the dump (a node lost, a kill): the
		// Job reaches the old pod's address, in vain. The backup starts
		// again from the new pod, the data volume's new server.
		msg, err := r.followServer(ctx, m, j, answers, ReasonBackingUp, "BackupAgain", "dumps from", "backing up from the new pod")
		if err != nil {
			return false, err
		}
		if msg != "" {
			return false, backingUp(o, "%s", msg)
		}
	}
	switch stateOf(j) {
	case jobRunning:
		// A dump written to a volume being deleted is lost with it: the
		// Job stops, and the backup runs again on a volume that stays.
		if err := r.stopIfLost(ctx, m, o, j); err != nil {
			return false, err
		}
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
	if err == nil && report == "" {
		report, err = r.liveReport(ctx, j)
	}
	if err != nil {
		return false, err
	}
	res, _ := scripts.ParseResult(report)
	if counts, err := r.checkBackup(ctx, m, o, j, res); !counts {
		return false, err
	}
	to := backupPVCName(m.Name)
	reason, msg := ReasonBackupDone, ""
	switch res.Outcome {
	case scripts.BackedUp:
		to += "/" + res.Dump
		msg = "backed up to " + to
	case scripts.BackedUpAside:
		to += "/" + res.Dump
		reason = ReasonBackupAside
		msg = fmt.Sprintf("backed up to %s, kept aside: latest still names the backup the next MySQL restores (see `kubectl logs job/%s`)", to, name)
	default:
		// Succeeded, so the dump is written, but which file it is and
		// whether it became latest are not known without the report.
		reason = ReasonBackupUnreported
		msg = fmt.Sprintf("%s succeeded without a report (its pod's termination message is empty): backed up to %s, under a name not known", name, to)
	}
	o.report(BackupSucceeded, metav1.ConditionTrue, reason, msg)
	o.backup = &backupReport{to: to, when: j.Status.CompletionTime}
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
			why := "the server never started, so there is nothing to back up"
			if pvc.UID == "" {
				// Deleted with its namespace, say: the rows went with it.
				why = fmt.Sprintf("there is no data volume %s of this MySQL's (deleted with its namespace, or never made), so there is nothing to back up", dataPVCName(m.Name))
			}
			r.skipBackup(m, o, ReasonNothingToBackUp, why)
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
	volume, err := r.ensureBackupPVC(ctx, m)
	if err == nil {
		j.Annotations[backupVolumeAnnotation] = string(volume.UID)
	}
	if pod != nil {
		j.Annotations[serverPodAnnotation] = string(pod.UID)
	}
	if err == nil && pod == nil {
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
	created, err := r.createJob(ctx, m, j)
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

// checkBackup returns true once the backup Job j, which succeeded with the
// report res, counts: the verify Job found the dump on the backup volume
// as j reported it (when j reported one), and then the backup volume, read
// from the API server, is still the one both Jobs wrote and read (its UID),
// bound, and not being deleted. Until then the MySQL, its server and its
// data volume stay; a volume lost meanwhile sends the backup to a new one.
func (r *MySQLReconciler) checkBackup(ctx context.Context, m *mysqlv1.MySQL, o *observed, j *batchv1.Job, res scripts.Result) (bool, error) {
	var v *batchv1.Job
	if res.Outcome == scripts.BackedUp || res.Outcome == scripts.BackedUpAside {
		var err error
		if v, err = r.verified(ctx, m, o, j, res); v == nil || err != nil {
			return false, err
		}
	}
	pvc, err := r.backupVolume(ctx, m, true)
	if err != nil {
		return false, err
	}
	if lost := volumeLost(m, j, pvc); lost != "" {
		return false, r.backupAgain(ctx, m, o, lost, j)
	}
	if v != nil && v.Annotations[backupVolumeAnnotation] != string(pvc.UID) {
		return false, r.backupAgain(ctx, m, o, fmt.Sprintf("%s is not the volume %s checked", pvc.Name, v.Name), j)
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		msg := fmt.Sprintf("%s succeeded, but the backup volume %s is %s, not Bound: its storage may be gone, so the backup "+
			"does not count, and MySQL %s, its server and its data volume stay. `kubectl describe pvc %s` says why; "+
			"`kubectl annotate mysql %s %s=true` deletes without a backup",
			j.Name, pvc.Name, pvc.Status.Phase, m.Name, pvc.Name, m.Name, mysqlv1.SkipBackupAnnotation)
		o.report(BackupSucceeded, metav1.ConditionFalse, ReasonBackupVolumeLost, msg)
		return false, conditions.Block(ReasonBackupVolumeLost, "%s", msg)
	}
	return true, nil
}

// verified runs the verify Job of backup Job j, whose report is res, and
// returns it once it succeeded (nil until then, with what to wait for).
func (r *MySQLReconciler) verified(ctx context.Context, m *mysqlv1.MySQL, o *observed, j *batchv1.Job, res scripts.Result) (*batchv1.Job, error) {
	name := verifyJobName(m.Name)
	v := &batchv1.Job{}
	err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, v)
	if apierrors.IsNotFound(err) {
		pvc, err := r.backupVolume(ctx, m, false)
		if err != nil {
			return nil, err
		}
		if lost := volumeLost(m, j, pvc); lost != "" {
			return nil, r.backupAgain(ctx, m, o, lost, j)
		}
		v = verifyJob(m, r.jobOptions(), j, res, pvc.UID)
		created, err := r.createJob(ctx, m, v)
		if err != nil {
			return nil, err
		}
		if created {
			r.Recorder.Eventf(m, v, corev1.EventTypeNormal, ReasonVerifying, "CreateVerifyJob",
				"Started %s: the backup counts once %s is on %s as %s reported", name, res.Dump, pvc.Name, j.Name)
		}
		return nil, verifying(o, name, res, pvc.Name)
	}
	if err != nil {
		return nil, err
	}
	if !ours(v, m) || v.Annotations[backupJobAnnotation] != string(j.UID) {
		// Of an earlier MySQL of the same name, or of an earlier backup:
		// it says nothing of this one.
		return nil, errors.Join(r.deleteJob(ctx, v),
			backingUp(o, "removing %s, which checked an earlier backup", name))
	}
	switch stateOf(v) {
	case jobRunning:
		if err := r.stopIfLost(ctx, m, o, j); err != nil {
			return nil, err
		}
		return nil, verifying(o, name, res, backupPVCName(m.Name))
	case jobFailed:
		msg := fmt.Sprintf("%s did not find %s on %s as %s reported it, so the backup does not count, and MySQL %s and its data stay. "+
			"`kubectl logs job/%s` says why; `kubectl delete job %s %s` runs the backup again; "+
			"`kubectl annotate mysql %s %s=true` deletes without a backup",
			name, res.Dump, backupPVCName(m.Name), j.Name, m.Name, name, j.Name, name, m.Name, mysqlv1.SkipBackupAnnotation)
		if r.told.Once(m, "failed "+string(v.UID)) {
			r.Recorder.Eventf(m, v, corev1.EventTypeWarning, ReasonNotVerified, "VerifyJobFailed", "%s", msg)
		}
		o.report(BackupSucceeded, metav1.ConditionFalse, ReasonNotVerified, msg)
		return nil, conditions.Block(ReasonNotVerified, "%s", msg)
	}
	return v, nil
}

func verifying(o *observed, name string, res scripts.Result, volume string) error {
	msg := fmt.Sprintf("%s is checking that %s is on %s as the backup reported", name, res.Dump, volume)
	o.report(BackupSucceeded, metav1.ConditionUnknown, ReasonVerifying, msg)
	return conditions.Wait(ReasonVerifying, "%s", msg)
}

// backupVolume reads m's backup volume, an empty claim when there is none:
// from the API server when live (to count a backup), else from the cache,
// and from the API server when the cache has none (enough to stop a Job
// early).
func (r *MySQLReconciler) backupVolume(ctx context.Context, m *mysqlv1.MySQL, live bool) (*corev1.PersistentVolumeClaim, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	key := client.ObjectKey{Namespace: m.Namespace, Name: backupPVCName(m.Name)}
	var err error
	if live {
		err = r.APIReader.Get(ctx, key, pvc)
	} else {
		err = apply.Get(ctx, r.Client, r.APIReader, key, pvc)
	}
	if apierrors.IsNotFound(err) {
		return &corev1.PersistentVolumeClaim{}, nil
	}
	return pvc, err
}

// stopIfLost stops backup Job j, running or checked, when its backup volume
// is lost (volumeLost): it returns backupAgain's error, nil when the
// volume stays.
func (r *MySQLReconciler) stopIfLost(ctx context.Context, m *mysqlv1.MySQL, o *observed, j *batchv1.Job) error {
	pvc, err := r.backupVolume(ctx, m, false)
	if err != nil {
		return err
	}
	if lost := volumeLost(m, j, pvc); lost != "" {
		return r.backupAgain(ctx, m, o, lost, j)
	}
	return nil
}

// volumeLost says how pvc, m's backup volume as read (empty for none), is
// lost for backup Job j, which writes or wrote to it, "" when it is not:
// gone, being deleted, replaced by another of its name (its UID is not the
// one j was made for), or no longer m's backup volume.
func volumeLost(m *mysqlv1.MySQL, j *batchv1.Job, pvc *corev1.PersistentVolumeClaim) string {
	name := backupPVCName(m.Name)
	want := types.UID(j.Annotations[backupVolumeAnnotation])
	switch {
	case pvc.UID == "":
		return name + " was deleted"
	case !pvc.DeletionTimestamp.IsZero():
		return name + " is being deleted"
	case want != "" && pvc.UID != want:
		return name + " was deleted and made again"
	case pvc.Annotations[backupOfAnnotation] != m.Name:
		return name + " is no longer a backup volume of " + m.Name
	}
	return ""
}

// backupAgain deletes backup Job j and its verify Job, whose dump went, or
// goes, with the backup volume (lost says how), so that the next pass backs
// up again, on a volume that stays: the MySQL, its server and its data
// volume stay meanwhile.
func (r *MySQLReconciler) backupAgain(ctx context.Context, m *mysqlv1.MySQL, o *observed, lost string, j *batchv1.Job) error {
	if err := r.deleteVerifyJob(ctx, m); err != nil {
		return err
	}
	if err := r.deleteJob(ctx, j); err != nil {
		return err
	}
	msg := fmt.Sprintf("%s while %s backed up %s to it: that backup does not count, and MySQL %s, its server and its data volume stay. "+
		"The backup runs again on a backup volume that stays (a new one, once the old one has gone)", lost, j.Name, m.Spec.Database, m.Name)
	if r.told.Once(m, "lost "+string(j.UID)) {
		r.Recorder.Eventf(m, j, corev1.EventTypeWarning, ReasonBackupVolumeLost, "BackupAgain", "%s", msg)
	}
	o.report(BackupSucceeded, metav1.ConditionFalse, ReasonBackupVolumeLost, msg)
	return conditions.Wait(ReasonBackupVolumeLost, "%s", msg)
}

// deleteVerifyJob deletes m's verify Job, if there is one of m's.
func (r *MySQLReconciler) deleteVerifyJob(ctx context.Context, m *mysqlv1.MySQL) error {
	v := &batchv1.Job{}
	err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: verifyJobName(m.Name)}, v)
	if err != nil || !ours(v, m) {
		return client.IgnoreNotFound(err)
	}
	return r.deleteJob(ctx, v)
}
