package controller

import (
	"context"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
)

// A password change (the homework's second extra task) must never leave the
// operator without a password that logs in: every backup, and so every
// deletion, needs one. The credentials Secret holds two: the password the
// server was last known to have, and a pending one that a password Job may
// have set. The invariant is that the server has one of the two, whatever
// the user edits, whichever way a Job ends and whenever the operator
// restarts. planPassword keeps it with three rules:
//
//   - the pending password is written only when there is none, that is when
//     the server's password is known;
//   - a Job sets one of the two passwords, logging in with either, so a Job
//     that fails or is killed halfway leaves the server with one of them;
//   - a Job's success is recorded only if the Secret is still as the Job's
//     pod read it, and nothing but that record changes the Secret while a
//     Job exists.
//
// A new password the user asks for while a change is unresolved waits until
// the pending one is set; asking for the previous password back sets that
// one instead.

// passwordState is what planPassword decides from.
type passwordState struct {
	// confirmed and pending are the Secret's two passwords; desired is the
	// spec's.
	confirmed, pending, desired string
	// job is the password Job, nil when there is none.
	job *passwordJobState
}

type passwordJobState struct {
	// target is the key of the password the Job sets.
	target string
	// fresh: the Secret has not changed since the Job was started.
	fresh       bool
	state       jobState
	terminating bool
}

// passwordAction is what to do next.
type passwordAction int

const (
	// passwordDone: the server has the desired password.
	passwordDone passwordAction = iota
	// passwordRecord: write the desired password as the pending one.
	passwordRecord
	// passwordStart: start a Job that sets the password under target.
	passwordStart
	// passwordWait: a Job runs, or is going.
	passwordWait
	// passwordConfirm: the Job succeeded; the password under target is the
	// server's, and nothing is pending any more.
	passwordConfirm
	// passwordRemove: delete the Job, which ended and is of no more use.
	passwordRemove
	// passwordFailed: the Job failed; a person must look.
	passwordFailed
)

type passwordStep struct {
	action passwordAction
	target string
}

// planPassword returns the next step towards the desired password.
func planPassword(s passwordState) passwordStep {
	want := keyPendingPassword
	if s.desired == s.confirmed {
		want = keyPassword
	}
	if j := s.job; j != nil {
		switch {
		case j.terminating || j.state == jobRunning:
			return passwordStep{action: passwordWait}
		case j.state == jobSucceeded && j.fresh:
			return passwordStep{action: passwordConfirm, target: j.target}
		case j.state == jobFailed && j.fresh && j.target == want:
			return passwordStep{action: passwordFailed, target: j.target}
		}
		return passwordStep{action: passwordRemove}
	}
	switch {
	case s.pending == "" && s.desired == s.confirmed:
		return passwordStep{action: passwordDone}
	case s.pending == "":
		return passwordStep{action: passwordRecord}
	}
	return passwordStep{action: passwordStart, target: want}
}

// reconcilePassword takes one step of planPassword. creds was read around
// the cache.
func (r *MySQLReconciler) reconcilePassword(ctx context.Context, m *mysqlv1.MySQL, creds *corev1.Secret, desired string, o *observed) error {
	name := passwordJobName(m.Name)
	j := &batchv1.Job{}
	err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, j)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return err
	case err == nil && !ours(j, m):
		return r.earlierJob(ctx, m, j)
	}
	s := passwordState{
		confirmed: string(creds.Data[keyPassword]),
		pending:   string(creds.Data[keyPendingPassword]),
		desired:   desired,
	}
	if err == nil && j.DeletionTimestamp.IsZero() && stateOf(j) != jobSucceeded {
		// A Job whose server pod was replaced (it waits in vain for the
		// old address, or lost it mid-statement) starts again against the
		// new one: it left the server with one of the two passwords, and
		// the next Job logs in with either.
		msg, err := r.followServer(ctx, m, j, answers, ReasonChangingPassword, "PasswordAgain", "talks to", "changing the password on the new pod")
		if err != nil {
			return err
		}
		if msg != "" {
			return changing(o, "%s", msg)
		}
	}
	if err == nil {
		s.job = &passwordJobState{
			target:      j.Annotations[targetAnnotation],
			fresh:       j.Annotations[credentialsVersionAnnotation] == creds.ResourceVersion,
			state:       stateOf(j),
			terminating: !j.DeletionTimestamp.IsZero(),
		}
	}

	step := planPassword(s)
	switch step.action {
	case passwordDone:
		// Said again from what is observed, on every pass once a change
		// was made (the credentials Secret counts them from 1): the pass
		// that confirmed the change carried it on (its spec not observed
		// yet) or lost its status write (a conflict drops it), and no
		// later pass confirms again; the condition is then said of the
		// spec carried out, which kubectl wait
		// --for=condition=PasswordChanged reads.
		if changes, _ := strconv.Atoi(creds.Annotations[passwordVersionAnnotation]); changes > 1 {
			o.report(PasswordChanged, metav1.ConditionTrue, ReasonPasswordChanged, "the server has the root password the spec asks for")
		}
		return nil
	case passwordRecord:
		creds.Data[keyPendingPassword] = []byte(desired)
		if err := r.updateCredentials(ctx, creds); err != nil {
			return err
		}
		o.report(PasswordChanged, metav1.ConditionUnknown, ReasonChangingPassword, "recorded the new password; starting "+name)
		return conditions.Carrying(ReasonChangingPassword, "recorded the new password; starting %s", name)
	case passwordStart:
		pod, err := r.serverPod(ctx, m)
		if err != nil {
			return err
		}
		if pod == nil {
			return changing(o, "waiting for the server's pod to answer before starting %s", name)
		}
		j = passwordJob(m, r.jobOptions(), pod.Status.PodIP, step.target, creds.ResourceVersion)
		j.Annotations[serverPodAnnotation] = string(pod.UID)
		if err := r.startJob(ctx, m, j, ReasonChangingPassword, "CreatePasswordJob", "Started "+name+" to change the root password"); err != nil {
			return err
		}
		return changing(o, "%s is changing the root password", name)
	case passwordWait:
		return changing(o, "%s is changing the root password", name)
	case passwordRemove:
		if err := r.deleteJob(ctx, j); err != nil {
			return err
		}
		return conditions.Carrying(ReasonChangingPassword, "removing %s, which ended", name)
	case passwordFailed:
		msg := fmt.Sprintf("%s failed: the server has the previous password or the new one, and the operator can log in with either. "+
			"`kubectl logs job/%s` says why; delete the Job to try again, or set the previous password back", name, name)
		o.report(PasswordChanged, metav1.ConditionFalse, ReasonPasswordFailed, msg)
		// The spec was not carried out: its generation is not observed.
		return &conditions.Blocked{Reason: ReasonPasswordFailed, Message: msg, Unapplied: true}
	}

	// passwordConfirm: the server has the target password. The Secret says
	// so from now on; the Job goes on the next pass, once it is stale.
	set := creds.Data[step.target]
	changed := string(set) != s.confirmed
	creds.Data[keyPassword] = set
	delete(creds.Data, keyPendingPassword)
	if changed {
		v, _ := strconv.Atoi(creds.Annotations[passwordVersionAnnotation])
		if creds.Annotations == nil {
			creds.Annotations = map[string]string{}
		}
		creds.Annotations[passwordVersionAnnotation] = strconv.Itoa(v + 1)
	}
	if err := r.updateCredentials(ctx, creds); err != nil {
		return err
	}
	if changed {
		r.Recorder.Eventf(m, j, corev1.EventTypeNormal, ReasonPasswordChanged, "PasswordJobDone", "The root password was changed")
	}
	o.report(PasswordChanged, metav1.ConditionTrue, ReasonPasswordChanged, "the server has the root password the spec asks for")
	if changed {
		// This pass applied the server's template with the version
		// before: the next one rolls the pod, and Ready describes the
		// spec only once the new pod serves. A client told Ready now
		// would be cut off by the roll.
		return conditions.Carrying(ReasonChangingPassword, "the server has the new password; its pod restarts with it")
	}
	return nil
}

// updateCredentials writes creds, the credentials Secret, and remembers the
// API server's answer: the next pass decides from it, not from an older
// version the cache may still show.
func (r *MySQLReconciler) updateCredentials(ctx context.Context, creds *corev1.Secret) error {
	if err := r.Update(ctx, creds, client.FieldOwner(FieldOwner)); err != nil {
		return err
	}
	r.secretReads.Remember(creds)
	return nil
}

// changing records that a password change is under way: until it is done,
// the spec is not carried out (Ready, true for the server that serves,
// describes the spec before).
func changing(o *observed, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	o.report(PasswordChanged, metav1.ConditionUnknown, ReasonChangingPassword, msg)
	return conditions.Carrying(ReasonChangingPassword, "%s", msg)
}

// deleteJob deletes a Job and its pods.
func (r *MySQLReconciler) deleteJob(ctx context.Context, j *batchv1.Job) error {
	err := r.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &j.UID})
	return client.IgnoreNotFound(err)
}

// desiredPassword returns the root password the spec asks for.
func (r *MySQLReconciler) desiredPassword(ctx context.Context, m *mysqlv1.MySQL) (string, error) {
	if m.Spec.PasswordSecretRef == nil {
		return m.Spec.Password, nil
	}
	ref := m.Spec.PasswordSecretRef
	p, err := r.Secrets.Key(ctx, r.secretReads, m.Namespace, ref.Name, ref.Key, "the root password", "")
	return string(p), err
}

// credentials returns the Secret that holds the passwords the server may
// have, creating it from the spec's password (desired, or desiredErr when
// there is none) the first time. Afterwards only reconcilePassword changes
// it, so it always holds a password the server accepts.
func (r *MySQLReconciler) credentials(ctx context.Context, m *mysqlv1.MySQL, desired string, desiredErr error) (*corev1.Secret, error) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: credentialsName(m.Name), Namespace: m.Namespace}}
	if desiredErr == nil {
		// One that neither the cache nor memory has is created at once:
		// the create says whether the name is taken (AlreadyExists, then
		// claimed below), where a read first cost every new MySQL a
		// request to the API server.
		absent, err := r.secretReads.Absent(ctx, client.ObjectKeyFromObject(s))
		if err != nil {
			return nil, err
		}
		if absent {
			if made, err := r.createCredentials(ctx, m, desired); !apierrors.IsAlreadyExists(err) {
				return made, err
			}
		}
	}
	exists, err := r.claim(ctx, m, s)
	switch {
	case err != nil:
		return nil, err
	case exists:
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		return s, nil
	case desiredErr != nil:
		return nil, desiredErr
	}
	return r.createCredentials(ctx, m, desired)
}

// createCredentials creates m's credentials Secret with the password
// desired.
func (r *MySQLReconciler) createCredentials(ctx context.Context, m *mysqlv1.MySQL, desired string) (*corev1.Secret, error) {
	s := credentialsSecret(m, desired)
	if err := r.Create(ctx, s, client.FieldOwner(FieldOwner)); err != nil {
		return nil, err
	}
	r.secretReads.Remember(s)
	return s, nil
}
