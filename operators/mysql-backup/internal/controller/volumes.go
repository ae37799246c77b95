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

	"github.com/operator-workshops/workshop/operators/common/conditions"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
	"github.com/operator-workshops/workshop/operators/mysql-backup/internal/scripts"
)

// applyDataPVC applies the data volume with its marks, and notes in o what a person
// should know of it: a volume being deleted under the server, or a change
// the API server refused (a claim's class cannot change, nor its size go
// down), with the server's message. Neither stops the other steps: the
// server goes on with the volume as it is, and the marks, the volume's
// record of its data, are written all the same (the restore Job goes only
// once its result is marked, and its ended pod holds the backup volume).
func (r *MySQLReconciler) applyDataPVC(ctx context.Context, m *mysqlv1.MySQL, live *corev1.PersistentVolumeClaim,
	mk marks, o *observed) error {
	if !live.DeletionTimestamp.IsZero() {
		o.problem.reason = ReasonDataVolumeDeleted
		if mk.restoredFrom == "" {
			o.problem.message = fmt.Sprintf("the data volume %s is being deleted, and no restore finished on it, so no client reached "+
				"its server through the Service: the server's pod, which holds the volume, is deleted so that it goes; "+
				"then a new volume is made and restored from the latest backup", live.Name)
		} else {
			o.problem.message = fmt.Sprintf("the data volume %s is being deleted: its data goes when the server's pod stops, "+
				"so no change to the server is applied meanwhile. "+
				"Delete the MySQL to back it up first; a new volume is restored from the latest backup", live.Name)
		}
		return r.mark(ctx, live, mk)
	}
	_, err := owner.ApplyChanged(ctx, r.Client, dataPVC(m, mk), live)
	if live.UID == "" || (!apierrors.IsInvalid(err) && !apierrors.IsForbidden(err)) {
		return err
	}
	refusal := err.Error()
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		refusal = status.Status().Message
	}
	o.problem.reason = ReasonDataVolumeRefused
	o.unapplied = true
	o.problem.message = fmt.Sprintf("the API server refused the spec's change to the data volume %s, which stays as it is "+
		"(to move the data to a new volume, delete the MySQL and create it again: it is backed up and restored): %s", live.Name, refusal)
	return r.mark(ctx, live, mk)
}

// mark writes marks mk on data volume live where the spec cannot be applied
// to it: the volume's record of its data must not wait for the spec.
func (r *MySQLReconciler) mark(ctx context.Context, live *corev1.PersistentVolumeClaim, mk marks) error {
	if mk == marksOf(live) {
		return nil
	}
	return r.annotate(ctx, live, mk.annotations())
}

// ensureBackupPVC creates the backup volume unless it exists, from an
// earlier MySQL of the same name for instance. It is never changed after,
// and it is used only if the operator made it for the backups of m's name
// (backupOfAnnotation): a claim of that name that is anything else (another
// MySQL's data volume, a person's claim) is a NameConflict, and one being
// deleted is no place for a backup.
func (r *MySQLReconciler) ensureBackupPVC(ctx context.Context, m *mysqlv1.MySQL) (*corev1.PersistentVolumeClaim, error) {
	pvc := backupPVC(m)
	// Read from the cache, else created; read from the API server only
	// when a claim the cache misses has the name.
	live := &corev1.PersistentVolumeClaim{}
	created, err := owner.CreateIfAbsent(ctx, r.Client, r.APIReader, pvc, live)
	switch {
	case err != nil:
		return nil, err
	case !created:
		err := checkBackupPVC(live, m)
		if errors.As(err, new(*conditions.Blocked)) && !live.DeletionTimestamp.IsZero() {
			if rerr := r.releaseBackupVolume(ctx, m); rerr != nil {
				return live, rerr
			}
		}
		return live, err
	}
	r.Recorder.Eventf(m, pvc, corev1.EventTypeNormal, "Created", "CreateBackupVolume", "Created %s for the backups; it outlives the MySQL", pvc.Name)
	return pvc, nil
}

// releaseBackupVolume lets m's backup volume, being deleted, go: a claim
// goes only once no pod scheduled with it is left, ended or not (the PVC
// protection controller's rule), and the pod of m's succeeded restore Job
// would stay as long as m. So that Job goes, once the data volume records
// what it restored (it is then of no use; `kubectl get jobs` no longer
// shows it). The backup and verify Jobs of m go when their volume is lost
// (backupAgain); a password Job mounts no backup volume.
func (r *MySQLReconciler) releaseBackupVolume(ctx context.Context, m *mysqlv1.MySQL) error {
	j, pvc := &batchv1.Job{}, &corev1.PersistentVolumeClaim{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: restoreJobName(m.Name)}, j); err != nil {
		return client.IgnoreNotFound(err)
	}
	if err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: dataPVCName(m.Name)}, pvc); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !ours(j, m) || stateOf(j) != jobSucceeded || !j.DeletionTimestamp.IsZero() ||
		pvc.Annotations[restoredAnnotation] == "" || j.Annotations[dataVolumeAnnotation] != string(pvc.UID) {
		return nil
	}
	if err := r.deleteJob(ctx, j); err != nil {
		return err
	}
	r.Recorder.Eventf(m, j, corev1.EventTypeNormal, ReasonBackupVolumeDeleted, "ReleaseBackupVolume",
		"Deleted the succeeded %s, whose pod held the backup volume %s being deleted", j.Name, backupPVCName(m.Name))
	return nil
}

// releaseDataVolume lets m's data volume pvc, being deleted before any
// restore finished on it, go: a claim goes only once no pod scheduled with
// it is left, and the server's pod would hold it for as long as it runs,
// for ever when it crash-loops on a data directory whose initialisation was
// killed (the case the Degraded advice to delete the volume is for). No
// client reached that server through the Service (markServing), and the
// person deleting the volume was told that rows written with kubectl exec go
// with it. The server's scheduled pods are deleted, by UID; the
// ReplicaSet's next one is not scheduled while the claim is being deleted,
// and starts on the new volume.
func (r *MySQLReconciler) releaseDataVolume(ctx context.Context, m *mysqlv1.MySQL, pvc *corev1.PersistentVolumeClaim) error {
	server, err := r.serverPods(ctx, m)
	if err != nil {
		return err
	}
	for _, p := range server {
		if p.Spec.NodeName == "" {
			continue
		}
		uid := p.UID
		err := r.Delete(ctx, p, client.Preconditions{UID: &uid})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return err
		}
		r.Recorder.Eventf(m, p, corev1.EventTypeNormal, ReasonServerPodDeleted, "DeleteServerPod",
			"Deleted the server pod %s, which held the data volume %s being deleted: no restore had finished on it", p.Name, pvc.Name)
	}
	return nil
}

// checkBackupPVC returns nil when live is the backup volume of m's name.
func checkBackupPVC(live *corev1.PersistentVolumeClaim, m *mysqlv1.MySQL) error {
	if live.Annotations[backupOfAnnotation] != m.Name {
		advice := fmt.Sprintf("It may hold someone's data: keep it, and give the MySQL another name. If it does hold %s's backups "+
			"(a copy restored from a snapshot, say), adopt it as its backup volume: `kubectl annotate pvc %s %s=%s`",
			m.Name, live.Name, backupOfAnnotation, m.Name)
		if of := live.Labels[mysqlLabel]; of != "" {
			advice = fmt.Sprintf("It is a volume of MySQL %s (the data volume of a MySQL named backup-N is named like N's backup volume): "+
				"keep it, and give the MySQL another name", of)
		}
		return conditions.NameConflictAdvising("PersistentVolumeClaim", live.Name, "MySQL", m.Name, fmt.Sprintf(
			"It is not a backup volume the operator made for %s, so no backup is written to it or read from it. %s", m.Name, advice))
	}
	if !live.DeletionTimestamp.IsZero() {
		return conditions.Block(ReasonBackupVolumeDeleted,
			"the backup volume %s is being deleted (it goes once no pod scheduled with it is left, ended or not: "+
				"the operator removes its own Jobs' ended pods): no backup can be written to it or read from it. "+
				"Once it is gone, the operator creates an empty one", live.Name)
	}
	return nil
}

// unreadBackups returns err, the backup volume's, unless it says that
// backup, bound, is being deleted and m's data volume is not restored:
// then the backups on it, the latest one too, are on no server, and go
// with the volume, and the error says how to keep them. Nothing the
// operator does lets the volume go meanwhile (the restore Job's pod, which
// cannot start, holds it).
func unreadBackups(err error, m *mysqlv1.MySQL, backup *corev1.PersistentVolumeClaim, restored bool) error {
	reason, _, _, _ := conditions.Reported(err)
	if reason != ReasonBackupVolumeDeleted || backup == nil || backup.Spec.VolumeName == "" || restored {
		return err
	}
	return conditions.Block(ReasonBackupVolumeDeleted,
		"the backup volume %s is being deleted before %s's restore read it: the backups on it, the latest one too, are on no server, "+
			"and they go with the volume. No pod can start with a volume being deleted, so the restore waits, and its pod keeps the "+
			"volume from going. To keep the backups, keep its PersistentVolume first: "+
			"`kubectl patch pv %s -p '{\"spec\":{\"persistentVolumeReclaimPolicy\":\"Retain\"}}'`. "+
			"Once the volume is gone, the operator creates an empty one, and the server starts with no data",
		backup.Name, m.Name, backup.Spec.VolumeName)
}

// room is what a restore Job measured of the backup volume: its free
// bytes and the size of the dump it restored, each -1 where the Job could
// not say. The zero room is one no Job reported.
type room struct {
	reported   bool
	free, dump int64
}

// roomOf reads a room from its annotation on the data volume
// (spaceAnnotation: "FREE/DUMP"); one that does not read as two numbers
// is a room measured but unknown.
func roomOf(annotation string) room {
	if annotation == "" {
		return room{}
	}
	r := room{reported: true}
	if _, err := fmt.Sscanf(annotation, "%d/%d", &r.free, &r.dump); err != nil {
		return room{reported: true, free: -1, dump: -1}
	}
	return r
}

// measuredRoom is the room a restore Job's report gives.
func measuredRoom(res *scripts.Result) room {
	return room{reported: true, free: res.FreeBytes, dump: res.DumpBytes}
}

// annotation is the room as spaceAnnotation's value, "" when none was reported.
func (r room) annotation() string {
	if !r.reported {
		return ""
	}
	return fmt.Sprintf("%d/%d", r.free, r.dump)
}

// recordSpace says BackupSpace from the room the restore Job measured of
// the backup volume (kept on the data volume): room for at least two dumps
// of the last one's size, so that the backup before delete does not find
// it full.
func recordSpace(m *mysqlv1.MySQL, o *observed, r room) {
	pvc := backupPVCName(m.Name)
	switch {
	case r.free < 0:
		o.report(BackupSpace, metav1.ConditionUnknown, ReasonSpaceUnknown, "the restore Job did not measure "+pvc)
	case r.dump > 0 && r.free < 2*r.dump:
		msg := fmt.Sprintf(
			"%s has %s free and the last dump took %s: the next backups may not fit. Expand the volume "+
				"(kubectl patch pvc %s, if its StorageClass allows expansion) or lower spec.backupsToKeep",
			pvc, mib(r.free), mib(r.dump), pvc)
		o.report(BackupSpace, metav1.ConditionFalse, ReasonSpaceLow, msg)
		o.spaceLow = &conditions.Report{Reason: ReasonSpaceLow, Message: msg}
	default:
		o.report(BackupSpace, metav1.ConditionTrue, ReasonSpaceOK, fmt.Sprintf("%s has %s free", pvc, mib(r.free)))
	}
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
