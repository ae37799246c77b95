package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/conditions"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
)

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
	next := marks{restoredFrom: restoredFrom, started: mk.started || restoredFrom != "", space: mk.space}
	if o.measured.reported {
		next.space = o.measured
	}
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
	if next.space.reported {
		recordSpace(m, o, next.space)
	}
	restored := restoredFrom != ""
	releasing := !restored && !pvc.DeletionTimestamp.IsZero()
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
		if releasing {
			if err := r.releaseDataVolume(ctx, m, pvc); err != nil {
				return err
			}
		}
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
	var blocked *conditions.Blocked
	restoreBlocked := errors.As(restoreErr, &blocked)
	if !o.serving && !releasing && (!restoreBlocked || blocked.Reason == ReasonRestoreFailed) {
		// A server pod the cluster refuses to create (a policy, a quota) or
		// the kubelet cannot run (an image it cannot pull, a crash loop)
		// waits for a person, not for time; not once its volume is being
		// let go (releaseDataVolume), which is what the person did. A
		// restore that failed on a server the kubelet cannot run failed
		// because of it: the kubelet's reason comes first; but a failed
		// restore says more than a readiness probe that fails.
		if err := refusedServer(live); err != nil {
			return err
		}
		if err := r.stuckServer(ctx, m, pvc, restoredFrom != "", !restoreBlocked, o); err != nil {
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

// serverReadyLimit is how long a server pod may run without being ready
// before a person is told: MySQL's first start initialises its data
// directory in seconds, a restart of a big one recovers in a minute or two.
const serverReadyLimit = 3 * time.Minute
