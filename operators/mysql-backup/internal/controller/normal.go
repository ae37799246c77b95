package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/pods"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
	"github.com/operator-workshops/workshop/operators/mysql-backup/internal/scripts"
)

// observed is what one pass saw of the server, for summarize.
type observed struct {
	// serving: the restore is done and the server answers clients through
	// its Service.
	serving bool
	// server says what the server is doing when it is not serving.
	server string
}

// summarize derives Ready, Progressing and Degraded from what this pass
// observed, so that none stays behind once its cause is gone, and from
// what stopped it early, if anything did: a person to act (Blocked) or
// something to wait for (Waiting). A failed API call leaves them as they
// were; the pass is retried.
func summarize(m *mysqlv1.MySQL, o observed, err error) {
	reason, msg, blocked, reported := conditions.Reported(err)
	if err != nil && !reported {
		return
	}
	switch {
	case o.serving:
		setCondition(m, conditions.Ready, metav1.ConditionTrue, ReasonReady, fmt.Sprintf("%s answers on %s:%d", m.Name, m.Name, mysqlPort))
	case reason != "":
		setCondition(m, conditions.Ready, metav1.ConditionFalse, reason, msg)
	default:
		setCondition(m, conditions.Ready, metav1.ConditionFalse, ReasonServerStarting, o.server)
	}
	switch {
	case blocked:
		setCondition(m, conditions.Progressing, metav1.ConditionFalse, reason, "waiting for a person to act: see Degraded")
	case reason != "":
		setCondition(m, conditions.Progressing, metav1.ConditionTrue, reason, msg)
	case !o.serving:
		setCondition(m, conditions.Progressing, metav1.ConditionTrue, ReasonServerStarting, o.server)
	default:
		setCondition(m, conditions.Progressing, metav1.ConditionFalse, ReasonUpToDate, "up to date")
	}
	space := meta.FindStatusCondition(m.Status.Conditions, BackupSpace)
	switch {
	case blocked:
		setCondition(m, conditions.Degraded, metav1.ConditionTrue, reason, msg)
	case space != nil && space.Status == metav1.ConditionFalse:
		setCondition(m, conditions.Degraded, metav1.ConditionTrue, space.Reason, space.Message)
	default:
		setCondition(m, conditions.Degraded, metav1.ConditionFalse, ReasonUpToDate, "no problem found")
	}
}

// reconcileChildren makes the server's objects, runs the restore and, once
// the server serves, password changes. It returns what it observed of the
// server.
func (r *MySQLReconciler) reconcileChildren(ctx context.Context, m *mysqlv1.MySQL) (observed, ctrl.Result, error) {
	var o observed
	err := r.reconcileServer(ctx, m, &o)
	return o, ctrl.Result{}, err
}

// reconcileServer is reconcileChildren's work, noting in o what it sees.
func (r *MySQLReconciler) reconcileServer(ctx context.Context, m *mysqlv1.MySQL, o *observed) error {
	o.server = fmt.Sprintf("waiting for the server of %s to start", m.Name)
	// A Secret named in the spec that is missing only matters before the
	// server exists, or for a password change: the server runs on.
	desired, desiredErr := r.desiredPassword(ctx, m)
	if desiredErr != nil && !errors.As(desiredErr, new(*conditions.Blocked)) {
		return desiredErr
	}
	creds, err := r.credentials(ctx, m, desired, desiredErr)
	if err != nil {
		return err
	}
	// Each child is read from the cache first (claim): one the last apply
	// left as it is costs no write.
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: dataPVCName(m.Name), Namespace: m.Namespace}}
	if _, err := r.claim(ctx, m, pvc); err != nil {
		return err
	}
	if _, err := owner.ApplyChanged(ctx, r.Client, dataPVC(m), pvc); err != nil {
		return err
	}
	if err := r.ensureBackupPVC(ctx, m); err != nil {
		return err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace}}
	if _, err := r.claim(ctx, m, svc); err != nil {
		return err
	}
	if _, err := owner.ApplyChanged(ctx, r.Client, service(m), svc); err != nil {
		return err
	}
	live, err := r.claimDeployment(ctx, m)
	if err != nil {
		return err
	}

	restoreErr := r.reconcileRestore(ctx, m)
	restored := meta.IsStatusConditionTrue(m.Status.Conditions, Restored)
	dep := deployment(m, restored, creds.Annotations[passwordVersionAnnotation], r.ServerRequests)
	sent, err := owner.ApplyChanged(ctx, r.Client, dep, live)
	if err != nil {
		return err
	}
	if sent {
		// The apply response carries the Deployment's status, which the
		// cache may not have yet.
		if live, err = answered(dep); err != nil {
			return err
		}
	}
	o.serving = restored && rolledOut(live)
	if restored && !o.serving {
		o.server = fmt.Sprintf("waiting for the server of %s to serve clients after its restore", m.Name)
	}
	if !o.serving && !errors.As(restoreErr, new(*conditions.Blocked)) {
		// A server the kubelet cannot run (an image it cannot pull, a crash
		// loop) waits for a person, not for time.
		if err := r.stuckServer(ctx, m); err != nil {
			return err
		}
	}
	if restoreErr != nil {
		return restoreErr
	}
	if desiredErr != nil {
		return desiredErr
	}
	return r.reconcilePassword(ctx, m, creds, desired)
}

// claimDeployment checks the Deployment is m's, and replaces one whose
// selector an earlier version of the operator made too wide (it matched the
// Jobs' pods): a selector cannot change in place. The data is on its volume.
// It returns the Deployment as the cache has it, empty when there is none.
func (r *MySQLReconciler) claimDeployment(ctx context.Context, m *mysqlv1.MySQL) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace}}
	exists, err := r.claim(ctx, m, d)
	if err != nil || !exists {
		return d, err
	}
	if !d.DeletionTimestamp.IsZero() {
		return nil, conditions.Wait(ReasonReplacing, "waiting for the old Deployment %s to go", d.Name)
	}
	if d.Spec.Selector != nil && maps.Equal(d.Spec.Selector.MatchLabels, serverSelector(m)) && len(d.Spec.Selector.MatchExpressions) == 0 {
		return d, nil
	}
	if err := r.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationForeground), client.Preconditions{UID: &d.UID}); client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	r.Recorder.Eventf(m, d, corev1.EventTypeNormal, ReasonReplacing, "DeleteDeployment",
		"Replacing Deployment %s: its selector also matched the Jobs' pods, and a selector cannot change in place", d.Name)
	return nil, conditions.Wait(ReasonReplacing, "replacing Deployment %s, whose selector also matched the Jobs' pods", d.Name)
}

// answered is the Deployment an apply answered with.
func answered(dep *appsv1ac.DeploymentApplyConfiguration) (*appsv1.Deployment, error) {
	b, err := json.Marshal(dep)
	if err != nil {
		return nil, err
	}
	d := &appsv1.Deployment{}
	return d, json.Unmarshal(b, d)
}

// rolledOut reports whether a Deployment of one replica runs the current
// template and its pod is available.
func rolledOut(d *appsv1.Deployment) bool {
	s := d.Status
	return d.Generation > 0 && s.ObservedGeneration >= d.Generation &&
		s.UpdatedReplicas == 1 && s.AvailableReplicas == 1 && s.Replicas == 1
}

// desiredPassword returns the root password the spec asks for.
func (r *MySQLReconciler) desiredPassword(ctx context.Context, m *mysqlv1.MySQL) (string, error) {
	if m.Spec.PasswordSecretRef == nil {
		return m.Spec.Password, nil
	}
	ref := m.Spec.PasswordSecretRef
	p, err := r.Secrets.Key(ctx, r.APIReader, m.Namespace, ref.Name, ref.Key, "the root password", "")
	return string(p), err
}

// credentials returns the Secret that holds the passwords the server may
// have, creating it from the spec's password (desired, or desiredErr when
// there is none) the first time. Afterwards only reconcilePassword changes
// it, so it always holds a password the server accepts.
func (r *MySQLReconciler) credentials(ctx context.Context, m *mysqlv1.MySQL, desired string, desiredErr error) (*corev1.Secret, error) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: credentialsName(m.Name), Namespace: m.Namespace}}
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
	s = credentialsSecret(m, desired)
	if err := r.Create(ctx, s, client.FieldOwner(FieldOwner)); err != nil {
		return nil, err
	}
	return s, nil
}

// ensureBackupPVC creates the backup volume unless it exists, from an
// earlier MySQL of the same name for instance. It is never changed after.
func (r *MySQLReconciler) ensureBackupPVC(ctx context.Context, m *mysqlv1.MySQL) error {
	pvc := backupPVC(m)
	// A read first, the cache's and else the API server's (for a volume
	// the operator did not make): a create that fails with AlreadyExists is
	// still a write on every pass.
	if err := apply.Get(ctx, r.Client, r.APIReader, client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{}); err == nil {
		return nil
	}
	err := r.Create(ctx, pvc, client.FieldOwner(FieldOwner))
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		r.Recorder.Eventf(m, pvc, corev1.EventTypeNormal, "Created", "CreateBackupVolume", "Created %s for the backups; it outlives the MySQL", pvc.Name)
	}
	return err
}

// serverPod returns a pod of m's server whose container answers (its
// readiness probe, mysqladmin ping, passes), nil when there is none.
func (r *MySQLReconciler) serverPod(ctx context.Context, m *mysqlv1.MySQL) (*corev1.Pod, error) {
	server, err := r.serverPods(ctx, m)
	if err != nil {
		return nil, err
	}
	for _, p := range server {
		if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && pods.Condition(p, corev1.ContainersReady) {
			return p, nil
		}
	}
	return nil, nil
}

// stuckServer returns a Blocked error with the kubelet's reason when a pod
// of m's server cannot run (pods.Stuck), nil otherwise.
func (r *MySQLReconciler) stuckServer(ctx context.Context, m *mysqlv1.MySQL) error {
	server, err := r.serverPods(ctx, m)
	if err != nil {
		return err
	}
	for _, p := range server {
		if reason, message, stuck := pods.Stuck(p); stuck {
			return conditions.Block(reason, "the server cannot run: %s", message)
		}
	}
	return nil
}

// serverPods returns the pods of m's server that are not being deleted.
func (r *MySQLReconciler) serverPods(ctx context.Context, m *mysqlv1.MySQL) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(m.Namespace), client.MatchingLabels(serverSelector(m))); err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for i := range list.Items {
		if p := &list.Items[i]; p.DeletionTimestamp.IsZero() {
			out = append(out, p)
		}
	}
	return out, nil
}

// reconcileRestore runs the restore Job once, when the new server answers,
// and returns nil once the restore is done.
func (r *MySQLReconciler) reconcileRestore(ctx context.Context, m *mysqlv1.MySQL) error {
	if meta.IsStatusConditionTrue(m.Status.Conditions, Restored) {
		return nil
	}
	name := restoreJobName(m.Name)
	j := &batchv1.Job{}
	err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, j)
	if apierrors.IsNotFound(err) {
		return r.startRestore(ctx, m)
	}
	switch {
	case err != nil:
		return err
	case !metav1.IsControlledBy(j, m):
		return restoring(m, ReasonPreviousJob, "%s of an earlier MySQL named %s is still being deleted", name, m.Name)
	}
	switch stateOf(j) {
	case jobRunning:
		return restoring(m, ReasonRestoring, "%s is loading the latest backup, if any", name)
	case jobFailed:
		msg := fmt.Sprintf("%s failed, see `kubectl logs job/%s`; delete the Job to try again. No client reaches the server meanwhile", name, name)
		setCondition(m, Restored, metav1.ConditionFalse, ReasonRestoreFailed, msg)
		return conditions.Block(ReasonRestoreFailed, "%s", msg)
	}
	report, err := r.report(ctx, j)
	if err != nil {
		return err
	}
	res, err := scripts.ParseResult(report)
	if err != nil {
		res = scripts.Result{FreeBytes: -1, DumpBytes: -1}
	}
	switch res.Outcome {
	case scripts.NoBackup:
		setCondition(m, Restored, metav1.ConditionTrue, ReasonNoBackup, "there was no backup to restore")
		m.Status.Message = fmt.Sprintf("%s created without restore-job: there was no backup to restore", m.Name)
	case scripts.Restored:
		m.Status.RestoredFrom = res.Dump
		setCondition(m, Restored, metav1.ConditionTrue, ReasonRestored, fmt.Sprintf("%s restored %s", name, res.Dump))
		m.Status.Message = fmt.Sprintf("%s created with restore-job", m.Name)
	default:
		// The script exits 0 only once it loaded the latest backup or found
		// none, so the server may serve; but without its report (a pod that
		// ran no script, as on kwok's fake nodes, leaves none) nobody knows
		// which it was, and the status does not pretend to.
		setCondition(m, Restored, metav1.ConditionTrue, ReasonRestoreUnreported,
			fmt.Sprintf("%s succeeded without a report (its pod's termination message is empty): what it loaded is not known", name))
		m.Status.Message = fmt.Sprintf("%s created with restore-job, which did not report what it loaded", m.Name)
	}
	recordSpace(m, res)
	if r.jobsTold.first(m, j) {
		r.Recorder.Eventf(m, j, corev1.EventTypeNormal, "Restored", "RestoreJobDone", "%s", m.Status.Message)
	}
	return nil
}

// startRestore starts the restore Job once the server answers.
func (r *MySQLReconciler) startRestore(ctx context.Context, m *mysqlv1.MySQL) error {
	name := restoreJobName(m.Name)
	pod, err := r.serverPod(ctx, m)
	if err != nil {
		return err
	}
	if pod == nil {
		return restoring(m, ReasonServerStarting, "waiting for the server to answer before running %s", name)
	}
	j := restoreJob(m, r.jobOptions(), pod.Status.PodIP)
	if err := controllerutil.SetControllerReference(m, j, r.Scheme()); err != nil {
		return err
	}
	created, err := owner.CreateOnce(ctx, r.Client, j)
	if err != nil {
		return err
	}
	if !created {
		return restoring(m, ReasonRestoring, "%s is loading the latest backup, if any", name)
	}
	r.Recorder.Eventf(m, j, corev1.EventTypeNormal, ReasonRestoring, "CreateRestoreJob", "Started %s to load the latest backup, if any", name)
	return restoring(m, ReasonRestoring, "%s is loading the latest backup, if any", name)
}

func restoring(m *mysqlv1.MySQL, reason, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	setCondition(m, Restored, metav1.ConditionUnknown, reason, msg)
	return conditions.Wait(reason, "%s", msg)
}

// recordSpace keeps what a Job measured of the backup volume: room for at
// least two dumps of the last one's size, so that the backup before delete
// does not find it full.
func recordSpace(m *mysqlv1.MySQL, res scripts.Result) {
	pvc := backupPVCName(m.Name)
	switch {
	case res.FreeBytes < 0:
		setCondition(m, BackupSpace, metav1.ConditionUnknown, ReasonSpaceUnknown, "the restore Job did not measure "+pvc)
	case res.DumpBytes > 0 && res.FreeBytes < 2*res.DumpBytes:
		setCondition(m, BackupSpace, metav1.ConditionFalse, ReasonSpaceLow, fmt.Sprintf(
			"%s has %s free and the last dump took %s: the next backups may not fit. Expand the volume "+
				"(kubectl patch pvc %s, if its StorageClass allows expansion) or lower spec.backupsToKeep",
			pvc, mib(res.FreeBytes), mib(res.DumpBytes), pvc))
	default:
		setCondition(m, BackupSpace, metav1.ConditionTrue, ReasonSpaceOK, fmt.Sprintf("%s has %s free", pvc, mib(res.FreeBytes)))
	}
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func setCondition(m *mysqlv1.MySQL, typ string, s metav1.ConditionStatus, reason, msg string) {
	conditions.Set(&m.Status.Conditions, m.Generation, typ, s, reason, "%s", msg)
}
