package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/manager"
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
	// problem, when its reason is set, is what a person should know while
	// the rest goes on: Degraded says it (a data volume the API server
	// refused to change, one being deleted under the server).
	problem struct{ reason, message string }
	// unapplied: the problem kept part of the spec from being carried out,
	// so its generation is not observed (reconciler.Run).
	unapplied bool
	// recheck, when set, is how soon to look again without an event: when
	// a server pod not ready yet reaches serverReadyLimit.
	recheck time.Duration
	// reports are what the pass found of the MySQL's own condition types
	// (Restored, BackupSpace, PasswordChanged; BackupSucceeded while it is
	// deleted), in the order found.
	reports []metav1.Condition
}

// report notes condition typ as the pass found it, for summarize.
func (o *observed) report(typ string, s metav1.ConditionStatus, reason, msg string) {
	o.reports = append(o.reports, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg})
}

// setReports sets the conditions o reports.
func setReports(m *mysqlv1.MySQL, o observed) {
	for _, c := range o.reports {
		setCondition(m, c.Type, c.Status, c.Reason, c.Message)
	}
}

// summarize is where a MySQL's conditions are set: the MySQL's own types
// as the pass found them (o.reports: what its Jobs and volumes say), then
// Ready, Progressing and Degraded derived from what this pass observed, so
// that none stays behind once its cause is gone, and from what stopped it
// early, if anything did: a person to act (Blocked) or something to wait
// for (Waiting). A failed API call leaves those three as they were; the
// pass is retried.
func summarize(m *mysqlv1.MySQL, o observed, err error) {
	setReports(m, o)
	if _, _, _, reported := conditions.Reported(err); err != nil && !reported {
		return
	}
	state := conditions.Observed{Ready: o.serving,
		Report: conditions.Report{Reason: ReasonServerStarting, Message: o.server}}
	if o.serving {
		state.Report = conditions.Report{Reason: ReasonReady, Message: fmt.Sprintf("%s answers on %s:%d", m.Name, m.Name, mysqlPort)}
	}
	space := meta.FindStatusCondition(m.Status.Conditions, BackupSpace)
	switch {
	case o.problem.reason != "":
		state.Problem = conditions.Report{Reason: o.problem.reason, Message: o.problem.message}
	case space != nil && space.Status == metav1.ConditionFalse:
		state.Problem = conditions.Report{Reason: space.Reason, Message: space.Message}
	}
	conditions.Summarize(&m.Status.Conditions, m.Generation, state.With(err))
}

// reconcileChildren makes the server's objects, runs the restore and, once
// the server serves, password changes. It returns what it observed of the
// server.
func (r *MySQLReconciler) reconcileChildren(ctx context.Context, m *mysqlv1.MySQL) (observed, ctrl.Result, error) {
	var o observed
	err := r.reconcileServer(ctx, m, &o)
	res := ctrl.Result{RequeueAfter: o.recheck}
	if err == nil && o.unapplied {
		// Everything else was carried out, but not the whole spec: its
		// generation is not marked observed (reconciler.Run).
		err = &conditions.Blocked{Reason: o.problem.reason, Message: o.problem.message, Unapplied: true}
	}
	return o, res, err
}

// reconcileServer is reconcileChildren's work, noting in o what it sees.
func (r *MySQLReconciler) reconcileServer(ctx context.Context, m *mysqlv1.MySQL, o *observed) (err error) {
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
	if err := r.applyDataPVC(ctx, m, pvc, marksOf(pvc), o); err != nil {
		return err
	}
	backup, backupErr := r.ensureBackupPVC(ctx, m)
	if reason, _, _, _ := conditions.Reported(backupErr); backupErr != nil && reason != ReasonBackupVolumeDeleted {
		return backupErr
	}
	var restoredFrom string
	if backupErr != nil {
		// A backup volume being deleted takes no backup, but a restore
		// from it is followed to its end (its pod holds the volume), so
		// that the rows it loads count and the volume can then go.
		defer func() { err = errors.Join(err, unreadBackups(backupErr, m, backup, restoredFrom != "")) }()
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

	restoredFrom, restoreErr := r.reconcileRestore(ctx, m, pvc, o)
	mk := marksOf(pvc)
	next := marks{restoredFrom: restoredFrom, started: mk.started || restoredFrom != ""}
	if !next.started && pvc.UID != "" {
		server, err := r.serverPods(ctx, m)
		if err != nil {
			return err
		}
		next.started = anyStarted(server)
	}
	if next != mk {
		if err := r.applyDataPVC(ctx, m, pvc, next, o); err != nil {
			return err
		}
	}
	restored := restoredFrom != ""
	// The Service selects the server once its pods are labelled serving
	// (markServing), not by its template, whose change would restart the
	// server just restored. A template an earlier release labelled keeps
	// its label while the volume stays restored: taking it off would
	// restart every server on the operator's upgrade.
	legacy := restored && live.Spec.Template.Labels[servingLabel] == "true"
	dep := deployment(m, legacy, creds.Annotations[passwordVersionAnnotation], r.ServerRequests)
	if err := r.admitted(ctx, m, dep, live); err != nil {
		return err
	}
	// A data volume being deleted goes, and its data with it, when the
	// server's pod stops: no change of the server's template (a password
	// change's roll, a new image) is applied meanwhile, as it would
	// replace that pod. Degraded says so, and how to keep the data
	// (applyDataPVC).
	var sent bool
	switch {
	case pvc.DeletionTimestamp.IsZero() || live.UID == "":
		if sent, err = owner.ApplyChanged(ctx, r.Client, dep, live); err != nil {
			return err
		}
	default:
		// A template the spec changed waits for the volume to go: the
		// spec is not carried out meanwhile.
		holds, err := apply.Holds(dep, live)
		if err != nil {
			return err
		}
		o.unapplied = !holds
	}
	if sent {
		// The apply response carries the Deployment's status, which the
		// cache may not have yet.
		if live, err = answered(dep); err != nil {
			return err
		}
	}
	if err := r.markServing(ctx, m, restored); err != nil {
		return err
	}
	o.serving = restored && rolledOut(live)
	if restored && !o.serving {
		o.server = fmt.Sprintf("waiting for the server of %s to serve clients after its restore", m.Name)
	}
	if !o.serving && !errors.As(restoreErr, new(*conditions.Blocked)) {
		// A server pod the cluster refuses to create (a policy, a quota) or
		// the kubelet cannot run (an image it cannot pull, a crash loop)
		// waits for a person, not for time.
		if err := refusedServer(live); err != nil {
			return err
		}
		if err := r.stuckServer(ctx, m, pvc, restoredFrom != "", o); err != nil {
			return err
		}
	}
	if restoreErr != nil {
		return restoreErr
	}
	if desiredErr != nil {
		return desiredErr
	}
	return r.reconcilePassword(ctx, m, creds, desired, o)
}

// applyDataPVC applies the data volume with its marks, and notes in o what a person
// should know of it: a volume being deleted under the server, or a change
// the API server refused (a claim's class cannot change, nor its size go
// down), with the server's message. Neither stops the other steps: the
// server goes on with the volume as it is.
func (r *MySQLReconciler) applyDataPVC(ctx context.Context, m *mysqlv1.MySQL, live *corev1.PersistentVolumeClaim,
	mk marks, o *observed) error {
	if !live.DeletionTimestamp.IsZero() {
		o.problem.reason = ReasonDataVolumeDeleted
		o.problem.message = fmt.Sprintf("the data volume %s is being deleted: its data goes when the server's pod stops, "+
			"so no change to the server is applied meanwhile. "+
			"Delete the MySQL to back it up first; a new volume is restored from the latest backup", live.Name)
		return nil
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
	if mk != marksOf(live) {
		// The volume's record of its data must not wait for the spec.
		return r.annotate(ctx, live, mk.annotations())
	}
	return nil
}

// markServing labels the server's pods for its Service (servingLabel) once
// the restore is done, and takes the label off any that wears it before
// (a new data volume waits for its restore; a person's label): a merge
// patch of the pod's labels, addressed by its UID, to the pods of the
// server's own ReplicaSets (serverPods). A pod replaced later, when the
// password changes or its node goes, is labelled as it appears: its data
// is on the restored volume.
func (r *MySQLReconciler) markServing(ctx context.Context, m *mysqlv1.MySQL, restored bool) error {
	server, err := r.serverPods(ctx, m)
	if err != nil {
		return err
	}
	var value any // null: the label goes
	if restored {
		value = "true"
	}
	for _, p := range server {
		if (p.Labels[servingLabel] == "true") == restored {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid": p.UID, "labels": map[string]any{servingLabel: value}}})
		if err != nil {
			return err
		}
		// The UID makes the patch fail on another pod of the same name
		// (a UID cannot change); a pod gone meanwhile needs no label.
		if err := r.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("labelling the server's pod %s for its Service: %w", p.Name, err)
		}
	}
	return nil
}

// claimDeployment checks the Deployment is m's, and returns it as the cache
// has it, empty when there is none; one being deleted is waited for.
func (r *MySQLReconciler) claimDeployment(ctx context.Context, m *mysqlv1.MySQL) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace}}
	if _, err := r.claim(ctx, m, d); err != nil {
		return nil, err
	}
	if !d.DeletionTimestamp.IsZero() {
		return nil, conditions.Wait(ReasonReplacing, "waiting for the deleted Deployment %s to go", d.Name)
	}
	return d, nil
}

// admitted marks dep with the hash of its pod template and, when that is
// not the template live runs, asks the API server first whether it would
// admit a pod of it: Recreate deletes the running server before it creates
// the new one, and a pod refused then (Pod Security, a policy, a webhook)
// would leave no server. A refusal leaves the Deployment as it is. A first
// Deployment has no server to keep, and is not asked for: a pod of it
// refused is told by its ReplicaFailure condition (refusedServer).
func (r *MySQLReconciler) admitted(ctx context.Context, m *mysqlv1.MySQL, dep *appsv1ac.DeploymentApplyConfiguration, live *appsv1.Deployment) error {
	hash := apply.SpecHash(dep.Spec.Template)
	dep.WithAnnotations(map[string]string{templateAnnotation: hash})
	if live.UID == "" || live.Annotations[templateAnnotation] == hash {
		return nil
	}
	return pods.Admitted(ctx, r.Client, m.Namespace, m.Name+"-", dep.Spec.Template)
}

// refusedServer is a *conditions.Blocked when the cluster refuses to create
// the server's pod, whatever the template's age (a policy, Pod Security, a
// quota or a webhook the pod meets when its Deployment is first made, or
// when a node's loss or a person's delete makes it create the pod again):
// the ReplicaFailure condition kube-controller-manager puts on d, with the
// API server's message. A condition of a template d's controller has not
// seen yet says nothing of it. The spec was carried out (d is applied), as
// when the kubelet cannot run the pod (stuckServer): its generation is
// observed, and Degraded says what a person must change.
func refusedServer(d *appsv1.Deployment) error {
	if d.Generation == 0 || d.Status.ObservedGeneration < d.Generation {
		return nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return &conditions.Blocked{Reason: conditions.ReasonRefused,
				Message: fmt.Sprintf("the cluster refuses to create the server's pod (%s): %s", c.Reason, c.Message)}
		}
	}
	return nil
}

// answered is the Deployment an apply answered with.
func answered(dep *appsv1ac.DeploymentApplyConfiguration) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	return d, apply.Decode(dep, d)
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
	if !metav1.IsControlledBy(j, m) || stateOf(j) != jobSucceeded || !j.DeletionTimestamp.IsZero() ||
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

// serverPod returns m's server pod whose container answers (its readiness
// probe, mysqladmin ping, passes), nil when there is none.
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

// replacedServer returns m's server pod that answers when it is not the
// one Job j was made for (serverPodAnnotation), nil otherwise: j talks to
// an address that is gone.
func (r *MySQLReconciler) replacedServer(ctx context.Context, m *mysqlv1.MySQL, j *batchv1.Job) (*corev1.Pod, error) {
	target := j.Annotations[serverPodAnnotation]
	if target == "" {
		return nil, nil
	}
	pod, err := r.serverPod(ctx, m)
	if err != nil || pod == nil || string(pod.UID) == target {
		return nil, err
	}
	return pod, nil
}

// serverReadyLimit is how long a server pod may run without being ready
// before a person is told: MySQL's first start initialises its data
// directory in seconds, a restart of a big one recovers in a minute or two.
const serverReadyLimit = 3 * time.Minute

// stuckServer returns a Blocked error when a pod of m's server cannot run
// (pods.Stuck: the kubelet's reason) or has run without being ready for
// serverReadyLimit, nil otherwise (and o.recheck for the limit). data is
// m's data volume, restored whether a restore ever finished on it.
func (r *MySQLReconciler) stuckServer(ctx context.Context, m *mysqlv1.MySQL, data *corev1.PersistentVolumeClaim, restored bool, o *observed) error {
	server, err := r.serverPods(ctx, m)
	if err != nil {
		return err
	}
	// No restore finished on the volume, so the Service never sent a
	// client to it (markServing): what it holds was written by kubectl
	// exec, if anything.
	advice := ""
	if !restored {
		advice = fmt.Sprintf(". No restore finished on its data volume %s, so no client reached this server through the Service. "+
			"If the log says the data directory is broken (its first initialisation was killed), delete the volume, "+
			"`kubectl delete pvc %s`: a new one is made and restored from the latest backup; only rows written with kubectl exec "+
			"since the volume was made would go with it", data.Name, data.Name)
	}
	for _, p := range server {
		if reason, message, stuck := pods.Stuck(p); stuck {
			return conditions.Block(reason, "the server cannot run: %s: `kubectl logs %s` says why%s", message, p.Name, advice)
		}
		since, notReady := pods.NotReadySince(p)
		if !notReady {
			continue
		}
		if left := serverReadyLimit - time.Since(since); left > 0 {
			o.recheck = left + time.Second
			continue
		}
		return &conditions.Blocked{Reason: ReasonServerNotReady, Recheck: 30 * time.Second, Message: fmt.Sprintf(
			"the server's pod %s has run for %s without being ready (its readiness probe fails): `kubectl logs %s` says why%s",
			p.Name, time.Since(since).Round(time.Second), p.Name, advice)}
	}
	return nil
}

// serverPods returns the pods of m's server that are not being deleted:
// the pods of the ReplicaSets of m's Deployment, by their owner references'
// UIDs. A pod that only wears the server's labels is not one: no dump is
// ever sent to it or taken from it.
func (r *MySQLReconciler) serverPods(ctx context.Context, m *mysqlv1.MySQL) ([]*corev1.Pod, error) {
	d := &appsv1.Deployment{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, d); err != nil || !ours(d, m) {
		return nil, client.IgnoreNotFound(err)
	}
	var sets appsv1.ReplicaSetList
	if err := r.List(ctx, &sets, manager.ControlledBy(d)); err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for i := range sets.Items {
		var list corev1.PodList
		if err := r.List(ctx, &list, manager.ControlledBy(&sets.Items[i])); err != nil {
			return nil, err
		}
		for j := range list.Items {
			if p := &list.Items[j]; p.DeletionTimestamp.IsZero() {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// reconcileRestore runs the restore Job once per data volume, when the
// new server answers, and returns what the volume was restored from once
// the restore is done ("" until then). What the volume needs comes from the
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
	case from != "" && (err != nil || !metav1.IsControlledBy(j, m) || stateOf(j) != jobSucceeded ||
		j.Annotations[dataVolumeAnnotation] != string(pvc.UID)):
		// Done, and the Job that did it is gone or not this volume's.
		reportRestored(m, o, from, nil)
		return from, nil
	case err != nil:
		return "", r.startRestore(ctx, m, pvc, o)
	case !metav1.IsControlledBy(j, m):
		return "", restoring(o, ReasonPreviousJob, "%s of an earlier MySQL named %s is still being deleted", name, m.Name)
	case !j.DeletionTimestamp.IsZero():
		return "", restoring(o, ReasonRestoring, "waiting for the previous %s to go before restoring again", name)
	case j.Annotations[dataVolumeAnnotation] != "" && j.Annotations[dataVolumeAnnotation] != string(pvc.UID):
		return "", r.restoreAgain(ctx, m, o, j, corev1.EventTypeWarning, ReasonDataVolumeReplaced, fmt.Sprintf(
			"the data volume %s was replaced after %s restored it (what was written since the last backup went with the old one): "+
				"restoring the latest backup into the new volume", pvc.Name, name))
	}
	if stateOf(j) != jobSucceeded {
		// A Job whose server pod was replaced (it waits in vain for the
		// old address, or lost it mid-stream) starts again against the
		// new one: the load is idempotent, and its RESTORE_ID stays.
		pod, err := r.replacedServer(ctx, m, j)
		if err != nil {
			return "", err
		}
		if pod != nil {
			return "", r.restoreAgain(ctx, m, o, j, corev1.EventTypeNormal, ReasonRestoring, fmt.Sprintf(
				"the server pod %s loads into was replaced by %s: restoring into the new pod", name, pod.Name))
		}
	}
	switch stateOf(j) {
	case jobRunning:
		return "", restoring(o, ReasonRestoring, "%s is loading the latest backup, if any", name)
	case jobFailed:
		msg := fmt.Sprintf("%s failed, see `kubectl logs job/%s`; delete the Job to try again. No client reaches the server meanwhile", name, name)
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
	recordSpace(m, o, res)
	if r.told.Once(m, string(j.UID)) {
		r.Recorder.Eventf(m, j, corev1.EventTypeNormal, "Restored", "RestoreJobDone", "%s", m.Status.Message)
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
	m.Status.RestoredFrom = ""
	switch from {
	case restoredNone:
		if aside != "" {
			o.report(Restored, metav1.ConditionTrue, ReasonNoLatest, "no backup is marked latest, so none was restored; the dump "+aside)
			m.Status.Message = fmt.Sprintf("%s created without restore-job: no backup is marked latest, but a dump kept aside exists (%s)", m.Name, res.Aside)
			return
		}
		o.report(Restored, metav1.ConditionTrue, ReasonNoBackup, "there was no backup to restore")
		m.Status.Message = fmt.Sprintf("%s created without restore-job: there was no backup to restore", m.Name)
	case restoredUnknown:
		o.report(Restored, metav1.ConditionTrue, ReasonRestoreUnreported,
			fmt.Sprintf("%s succeeded without a report (its pod's termination message is empty): what it loaded is not known", name))
		m.Status.Message = fmt.Sprintf("%s created with restore-job, which did not report what it loaded", m.Name)
	default:
		m.Status.RestoredFrom = from
		msg := fmt.Sprintf("%s restored %s", name, from)
		if aside != "" {
			msg += "; a newer dump, " + aside
		}
		o.report(Restored, metav1.ConditionTrue, ReasonRestored, msg)
		m.Status.Message = fmt.Sprintf("%s created with restore-job", m.Name)
	}
}

// restoreAgain deletes m's restore Job j, which is of no use to the server
// as it is now, so that the next pass restores again, and says why.
func (r *MySQLReconciler) restoreAgain(ctx context.Context, m *mysqlv1.MySQL, o *observed, j *batchv1.Job, eventType, reason, msg string) error {
	if err := r.deleteJob(ctx, j); err != nil {
		return err
	}
	r.Recorder.Eventf(m, j, eventType, reason, "RestoreAgain", "%s", msg)
	return restoring(o, reason, "%s", msg)
}

// startRestore starts the restore Job of data volume pvc once the server
// answers.
func (r *MySQLReconciler) startRestore(ctx context.Context, m *mysqlv1.MySQL, pvc *corev1.PersistentVolumeClaim, o *observed) error {
	name := restoreJobName(m.Name)
	pod, err := r.serverPod(ctx, m)
	if err != nil {
		return err
	}
	if pod == nil {
		return serverStarting(m, o)
	}
	j := restoreJob(m, r.jobOptions(), pod, pvc.UID)
	if err := r.startJob(ctx, m, j, ReasonRestoring, "CreateRestoreJob", "Started "+name+" to load the latest backup, if any"); err != nil {
		return err
	}
	return restoring(o, ReasonRestoring, "%s is loading the latest backup, if any", name)
}

// serverStarting says the restore waits for the server to answer: one
// message while its volume binds and its pod starts, so that the status is
// written once for the wait, not once per step of it.
func serverStarting(m *mysqlv1.MySQL, o *observed) error {
	return restoring(o, ReasonServerStarting, "starting the server; then %s loads the latest backup, if any", restoreJobName(m.Name))
}

func restoring(o *observed, reason, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	o.report(Restored, metav1.ConditionUnknown, reason, msg)
	return conditions.Wait(reason, "%s", msg)
}

// recordSpace keeps what a Job measured of the backup volume: room for at
// least two dumps of the last one's size, so that the backup before delete
// does not find it full.
func recordSpace(m *mysqlv1.MySQL, o *observed, res scripts.Result) {
	pvc := backupPVCName(m.Name)
	switch {
	case res.FreeBytes < 0:
		o.report(BackupSpace, metav1.ConditionUnknown, ReasonSpaceUnknown, "the restore Job did not measure "+pvc)
	case res.DumpBytes > 0 && res.FreeBytes < 2*res.DumpBytes:
		o.report(BackupSpace, metav1.ConditionFalse, ReasonSpaceLow, fmt.Sprintf(
			"%s has %s free and the last dump took %s: the next backups may not fit. Expand the volume "+
				"(kubectl patch pvc %s, if its StorageClass allows expansion) or lower spec.backupsToKeep",
			pvc, mib(res.FreeBytes), mib(res.DumpBytes), pvc))
	default:
		o.report(BackupSpace, metav1.ConditionTrue, ReasonSpaceOK, fmt.Sprintf("%s has %s free", pvc, mib(res.FreeBytes)))
	}
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func setCondition(m *mysqlv1.MySQL, typ string, s metav1.ConditionStatus, reason, msg string) {
	conditions.Set(&m.Status.Conditions, m.Generation, typ, s, reason, "%s", msg)
}
