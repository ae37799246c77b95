package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/conditions"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
	"github.com/operator-workshops/workshop/operators/mysql-backup/internal/scripts"
)

func (r *MySQLReconciler) reconcileNormal(ctx context.Context, m *mysqlv1.MySQL) error {
	err := r.reconcileChildren(ctx, m)
	var b *conditions.Blocked
	if errors.As(err, &b) {
		setCondition(m, conditions.Ready, metav1.ConditionFalse, b.Reason, b.Message)
		setCondition(m, conditions.Degraded, metav1.ConditionTrue, b.Reason, b.Message)
		return nil
	}
	return err
}

// reconcileChildren applies the server's objects, then runs the restore and,
// later, password changes.
func (r *MySQLReconciler) reconcileChildren(ctx context.Context, m *mysqlv1.MySQL) error {
	ref, err := apply.ControllerReference(m, r.Scheme())
	if err != nil {
		return err
	}
	desired, err := r.desiredPassword(ctx, m)
	if err != nil {
		return err
	}
	creds, err := r.credentials(ctx, m, desired)
	if err != nil {
		return err
	}
	if err := owner.Apply(ctx, r.Client, dataPVC(m, ref)); err != nil {
		return err
	}
	if err := r.ensureBackupPVC(ctx, m); err != nil {
		return err
	}
	dep := deployment(m, hash(m, string(creds.Data[keyPassword])), ref)
	if err := owner.Apply(ctx, r.Client, dep); err != nil {
		return err
	}
	if err := owner.Apply(ctx, r.Client, service(m, ref)); err != nil {
		return err
	}
	// The apply response carries the Deployment's status.
	available := dep.Status != nil && dep.Status.AvailableReplicas != nil && *dep.Status.AvailableReplicas > 0

	restored, err := r.reconcileRestore(ctx, m, available)
	if err != nil || !restored {
		return err
	}
	if err := r.reconcilePassword(ctx, m, creds, desired); err != nil {
		return err
	}
	if !available {
		setCondition(m, conditions.Ready, metav1.ConditionFalse, ReasonServerStarting, fmt.Sprintf("waiting for the server of %s to answer", m.Name))
		return nil
	}
	setCondition(m, conditions.Ready, metav1.ConditionTrue, ReasonReady, fmt.Sprintf("%s answers on %s:%d", m.Name, m.Name, mysqlPort))
	return nil
}

// desiredPassword returns the root password the spec asks for.
func (r *MySQLReconciler) desiredPassword(ctx context.Context, m *mysqlv1.MySQL) (string, error) {
	if m.Spec.PasswordSecretRef == nil {
		return m.Spec.Password, nil
	}
	ref := m.Spec.PasswordSecretRef
	var s corev1.Secret
	if err := r.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: ref.Name}, &s); apierrors.IsNotFound(err) {
		return "", conditions.Block(ReasonSecretNotFound, "Secret %q not found: create it with the root password under key %q", ref.Name, ref.Key)
	} else if err != nil {
		return "", err
	}
	p, ok := s.Data[ref.Key]
	if !ok || len(p) == 0 {
		return "", conditions.Block(ReasonSecretKeyMissing, "Secret %q has no key %q: add the root password under that key", ref.Name, ref.Key)
	}
	return string(p), nil
}

// credentials returns the Secret that holds the password the server has.
// The operator creates it from the spec once; afterwards only a successful
// password Job changes it, so it always says what the server accepts.
func (r *MySQLReconciler) credentials(ctx context.Context, m *mysqlv1.MySQL, desired string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: credentialsName(m.Name)}, s)
	if apierrors.IsNotFound(err) {
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: credentialsName(m.Name), Namespace: m.Namespace, Labels: childLabels(m)},
			Data:       map[string][]byte{keyPassword: []byte(desired)},
		}
		if err := controllerutil.SetControllerReference(m, s, r.Scheme()); err != nil {
			return nil, err
		}
		return s, r.Create(ctx, s, client.FieldOwner(FieldOwner))
	}
	if err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(s, m) {
		return nil, conditions.Block("NameConflict", "Secret %q exists and does not belong to MySQL %q: delete or rename it", s.Name, m.Name)
	}
	return s, nil
}

// ensureBackupPVC creates the backup volume unless it exists, from an
// earlier MySQL of the same name for instance. It is never changed after.
func (r *MySQLReconciler) ensureBackupPVC(ctx context.Context, m *mysqlv1.MySQL) error {
	pvc := backupPVC(m)
	err := r.Create(ctx, pvc, client.FieldOwner(FieldOwner))
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		r.Recorder.Eventf(m, pvc, corev1.EventTypeNormal, "Created", "CreateBackupVolume", "Created %s for the backups; it outlives the MySQL", pvc.Name)
	}
	return err
}

// reconcileRestore runs the restore Job once, when the new server answers.
// It returns true when the restore is over.
func (r *MySQLReconciler) reconcileRestore(ctx context.Context, m *mysqlv1.MySQL, available bool) (bool, error) {
	if meta.IsStatusConditionTrue(m.Status.Conditions, Restored) {
		return true, nil
	}
	name := restoreJobName(m.Name)
	j := restoreJob(m, r.deadline())
	err := r.Get(ctx, client.ObjectKeyFromObject(j), j)
	switch {
	case apierrors.IsNotFound(err) && !available:
		setRestoring(m, ReasonServerStarting, fmt.Sprintf("waiting for the server to answer before running %s", name))
		return false, nil
	case apierrors.IsNotFound(err):
		j = restoreJob(m, r.deadline())
		if err := controllerutil.SetControllerReference(m, j, r.Scheme()); err != nil {
			return false, err
		}
		if err := r.Create(ctx, j, client.FieldOwner(FieldOwner)); apierrors.IsAlreadyExists(err) {
			return false, nil // created by an earlier reconcile; the cache will show it
		} else if err != nil {
			return false, err
		}
		r.Recorder.Eventf(m, j, corev1.EventTypeNormal, "Restoring", "CreateRestoreJob", "Started %s to load the latest backup, if any", name)
		setRestoring(m, ReasonRestoring, fmt.Sprintf("%s is loading the latest backup, if any", name))
		return false, nil
	case err != nil:
		return false, err
	case !metav1.IsControlledBy(j, m):
		setRestoring(m, ReasonPreviousJob, fmt.Sprintf("%s of an earlier MySQL named %s is still being deleted", name, m.Name))
		return false, nil
	}
	switch stateOf(j) {
	case jobRunning:
		setRestoring(m, ReasonRestoring, fmt.Sprintf("%s is loading the latest backup, if any", name))
		return false, nil
	case jobFailed:
		msg := fmt.Sprintf("%s failed, see `kubectl logs job/%s`; delete the Job to try again", name, name)
		setCondition(m, Restored, metav1.ConditionFalse, ReasonRestoreFailed, msg)
		return false, conditions.Block(ReasonRestoreFailed, "%s", msg)
	}
	report, err := r.report(ctx, j)
	if err != nil {
		return false, err
	}
	// A cluster with simulated pods reports nothing: the Job's success is
	// all there is to go by.
	res, _ := scripts.ParseResult(report)
	switch res.Outcome {
	case scripts.NoBackup:
		setCondition(m, Restored, metav1.ConditionTrue, ReasonNoBackup, "there was no backup to restore")
		m.Status.Message = fmt.Sprintf("%s created without restore-job: there was no backup to restore", m.Name)
	case scripts.Restored:
		m.Status.RestoredFrom = res.Dump
		setCondition(m, Restored, metav1.ConditionTrue, ReasonRestored, fmt.Sprintf("%s restored %s", name, res.Dump))
		m.Status.Message = fmt.Sprintf("%s created with restore-job", m.Name)
	default:
		setCondition(m, Restored, metav1.ConditionTrue, ReasonRestored, fmt.Sprintf("%s completed", name))
		m.Status.Message = fmt.Sprintf("%s created with restore-job", m.Name)
	}
	setCondition(m, conditions.Progressing, metav1.ConditionFalse, ReasonReady, "restore done")
	r.Recorder.Eventf(m, j, corev1.EventTypeNormal, "Restored", "RestoreJobDone", "%s", m.Status.Message)
	return true, nil
}

func setRestoring(m *mysqlv1.MySQL, reason, msg string) {
	setCondition(m, Restored, metav1.ConditionUnknown, reason, msg)
	setCondition(m, conditions.Ready, metav1.ConditionFalse, reason, msg)
	setCondition(m, conditions.Progressing, metav1.ConditionTrue, reason, msg)
}

func setCondition(m *mysqlv1.MySQL, typ string, s metav1.ConditionStatus, reason, msg string) {
	conditions.Set(&m.Status.Conditions, m.Generation, typ, s, reason, "%s", msg)
}
