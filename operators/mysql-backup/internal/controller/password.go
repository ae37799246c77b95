package controller

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
)

// reconcilePassword changes the password in the running server when the
// spec asks for another one (the homework's second extra task). The
// credentials Secret keeps the password the server has until the password
// Job succeeded, so the operator can always log in: with the old one before,
// with the new one after. A failure leaves the server as it was and says so.
func (r *MySQLReconciler) reconcilePassword(ctx context.Context, m *mysqlv1.MySQL, creds *corev1.Secret, desired string) error {
	name := passwordJobName(m.Name)
	j := &batchv1.Job{}
	err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, j)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	exists := err == nil

	if string(creds.Data[keyPassword]) == desired {
		setCondition(m, conditions.Degraded, metav1.ConditionFalse, ReasonReady, "no problem found")
		if exists {
			return r.deleteJob(ctx, j)
		}
		return nil
	}

	want := hash(m, desired)
	switch {
	case string(creds.Data[keyPendingPassword]) != desired:
		// Record the new password beside the current one; the Secret
		// update brings us back.
		creds.Data[keyPendingPassword] = []byte(desired)
		setChanging(m, "recording the new password")
		return r.Update(ctx, creds, client.FieldOwner(FieldOwner))
	case exists && j.Annotations[passwordHashAnnotation] != want:
		setChanging(m, "the password changed again: replacing "+name)
		return r.deleteJob(ctx, j)
	case !exists:
		j = passwordJob(m, r.deadline(), want)
		if err := controllerutil.SetControllerReference(m, j, r.Scheme()); err != nil {
			return err
		}
		if err := r.Create(ctx, j, client.FieldOwner(FieldOwner)); apierrors.IsAlreadyExists(err) {
			return nil // created by an earlier reconcile; the cache will show it
		} else if err != nil {
			return err
		}
		r.Recorder.Eventf(m, j, corev1.EventTypeNormal, "ChangingPassword", "CreatePasswordJob", "Started %s to change the root password", name)
		setChanging(m, name+" is changing the root password")
		return nil
	}

	switch stateOf(j) {
	case jobRunning:
		setChanging(m, name+" is changing the root password")
		return nil
	case jobFailed:
		msg := fmt.Sprintf("%s failed: the server keeps its old password. `kubectl logs job/%s` says why; "+
			"delete the Job to try again, or set the old password back", name, name)
		if c := meta.FindStatusCondition(m.Status.Conditions, PasswordChanged); c == nil || c.Reason != ReasonPasswordFailed {
			r.Recorder.Eventf(m, j, corev1.EventTypeWarning, ReasonPasswordFailed, "PasswordJobFailed", "%s", msg)
		}
		setCondition(m, PasswordChanged, metav1.ConditionFalse, ReasonPasswordFailed, msg)
		setCondition(m, conditions.Degraded, metav1.ConditionTrue, ReasonPasswordFailed, msg)
		return nil
	}
	// The server has the new password: so does the Secret from now on, and
	// the server's pod rolls to match (its template carries the hash).
	creds.Data[keyPassword] = []byte(desired)
	delete(creds.Data, keyPendingPassword)
	if err := r.Update(ctx, creds, client.FieldOwner(FieldOwner)); err != nil {
		return err
	}
	r.Recorder.Eventf(m, j, corev1.EventTypeNormal, ReasonPasswordChanged, "PasswordJobDone", "The root password was changed")
	setCondition(m, PasswordChanged, metav1.ConditionTrue, ReasonPasswordChanged, "the server has the new root password")
	setCondition(m, conditions.Degraded, metav1.ConditionFalse, ReasonReady, "no problem found")
	return r.deleteJob(ctx, j)
}

func setChanging(m *mysqlv1.MySQL, msg string) {
	setCondition(m, PasswordChanged, metav1.ConditionUnknown, ReasonChangingPassword, msg)
	setCondition(m, conditions.Progressing, metav1.ConditionTrue, ReasonChangingPassword, msg)
}

// deleteJob deletes a Job and its pods.
func (r *MySQLReconciler) deleteJob(ctx context.Context, j *batchv1.Job) error {
	err := r.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &j.UID})
	return client.IgnoreNotFound(err)
}
