// Command local-provisioner provisions volumes for the workshop's local kwok
// cluster (scripts/cluster.sh starts it beside the cluster).
//
// A kwok cluster has a real control plane but fake nodes: no kubelet, no CSI
// driver, no disk. Nothing there would ever create a PersistentVolume, so every
// PersistentVolumeClaim, and with it every pod and StatefulSet replica that
// mounts one, would stay Pending. kind solves the same problem with
// local-path-provisioner, which needs a real node to run its helper pods; this
// program plays its part from the host instead, in a few API calls:
//
//   - it creates the default StorageClass "standard" (WaitForFirstConsumer,
//     like kind's) whose provisioner is this program;
//   - for a pending claim of such a class, once the scheduler has written the
//     node it picked to the claim, it creates a hostPath volume pinned to that
//     node and pre-bound to the claim; kube-controller-manager then binds the
//     pair and the scheduler binds the pod, as with any dynamic provisioner;
//   - when a volume it made is Released and its reclaim policy is Delete, it
//     deletes the volume.
//
// No data is stored anywhere for a fake node: it never mounts the path. The
// real node (scripts/node.sh, label workshop.local/real-node=true) runs on
// this machine, so its volumes are real: a directory of their own under
// --volume-dir, made here, given to the pod as a local volume, and removed
// with the volume.
//
// On kind, whose node wears the real node's label (scripts/kind-config.yaml),
// the provisioner runs in a pod of that node (the kind node image's default
// storage), with --volume-dir a directory of the node it mounts at the same
// path, so the node's claims get directories as the real node's do.
//
// Usage: local-provisioner [--kubeconfig FILE] [--volume-dir DIR]
package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

func main() {
	opts := zap.Options{Development: true}
	opts.BindFlags(flag.CommandLine)
	volumeDir := flag.String("volume-dir", "", "directory of the real node's volumes on this machine; without it, claims on the real node are refused")
	flag.Parse() // --kubeconfig is registered by controller-runtime's config package
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("local-provisioner")

	// No metrics port: one provisioner runs per local cluster, side by side.
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err == nil {
		err = mgr.Add(manager.RunnableFunc(ensureStorageClass(mgr.GetClient())))
	}
	if err == nil {
		err = ctrl.NewControllerManagedBy(mgr).For(&corev1.PersistentVolumeClaim{}).
			Complete(&claimReconciler{Client: mgr.GetClient(), events: mgr.GetEventRecorder("local-provisioner"), volumeDir: *volumeDir})
	}
	if err == nil {
		ours := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetAnnotations()[annProvisionedBy] == Provisioner })
		err = ctrl.NewControllerManagedBy(mgr).For(&corev1.PersistentVolume{}, builder.WithPredicates(ours)).
			Complete(&volumeReconciler{Client: mgr.GetClient(), volumeDir: *volumeDir})
	}
	if err == nil {
		log.Info("provisioning volumes", "provisioner", Provisioner, "storageClass", StorageClassName)
		err = mgr.Start(ctrl.SetupSignalHandler())
	}
	if err != nil {
		log.Error(err, "local-provisioner failed")
		os.Exit(1)
	}
}

// ensureStorageClass creates the default class once the manager runs. It lives
// here rather than in a manifest so the class and the provisioner name it
// points to cannot drift apart.
func ensureStorageClass(c client.Client) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := c.Create(ctx, storageClass()); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		<-ctx.Done()
		return nil
	}
}

type claimReconciler struct {
	client.Client
	events    recorder.EventRecorder
	volumeDir string
}

func (r *claimReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var claim corev1.PersistentVolumeClaim
	if err := r.Get(ctx, req.NamespacedName, &claim); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if claim.Spec.VolumeName != "" || claim.Status.Phase != corev1.ClaimPending ||
		claim.DeletionTimestamp != nil || claim.Spec.StorageClassName == nil {
		return ctrl.Result{}, nil
	}
	var class storagev1.StorageClass
	if err := r.Get(ctx, types.NamespacedName{Name: *claim.Spec.StorageClassName}, &class); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	node := claim.Annotations[annSelectedNode]
	if class.Provisioner != Provisioner ||
		(node == "" && class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer) {
		return ctrl.Result{}, nil // not ours, or no pod scheduled yet: the scheduler's annotation brings us back
	}
	realDir, err := r.realDir(ctx, node)
	if err != nil {
		return ctrl.Result{}, err
	}
	pv, err := volumeForClaim(&claim, &class, node, realDir)
	if err == nil && realDir != "" {
		// Open to every user, as kind's local-path-provisioner makes them:
		// the pod's user is not known here, and fsGroup, when set, narrows it.
		dir := filepath.Join(realDir, VolumeName(&claim))
		if err = os.MkdirAll(dir, 0o777); err == nil {
			err = os.Chmod(dir, 0o777)
		}
	}
	if err != nil {
		r.events.Eventf(&claim, nil, corev1.EventTypeWarning, "ProvisioningFailed", "Provision", "%s: %v", Provisioner, err)
		return ctrl.Result{}, nil // retrying cannot help until the claim changes
	}
	if err := r.Create(ctx, pv); apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, nil
	} else if err != nil {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("provisioned volume", "volume", pv.Name, "node", node)
	r.events.Eventf(&claim, pv, corev1.EventTypeNormal, "ProvisioningSucceeded", "Provision",
		"%s provisioned volume %s on node %q", Provisioner, pv.Name, node)
	return ctrl.Result{}, nil
}

// realDir returns the directory of node's volumes on this machine, or ""
// for a fake node.
func (r *claimReconciler) realDir(ctx context.Context, node string) (string, error) {
	if node == "" {
		return "", nil
	}
	var n corev1.Node
	if err := r.Get(ctx, types.NamespacedName{Name: node}, &n); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if n.Labels[RealNodeLabel] != "true" {
		return "", nil
	}
	if r.volumeDir == "" {
		return "", errors.New("node " + node + " is the real node, but local-provisioner runs without --volume-dir: restart it as scripts/cluster.sh does")
	}
	return r.volumeDir, nil
}

type volumeReconciler struct {
	client.Client
	volumeDir string
}

func (r *volumeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pv corev1.PersistentVolume
	if err := r.Get(ctx, req.NamespacedName, &pv); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if pv.Status.Phase != corev1.VolumeReleased || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		pv.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	// The data of a real volume goes with it; a path outside --volume-dir was
	// not made here and is left alone.
	if l := pv.Spec.Local; l != nil && r.volumeDir != "" && filepath.Dir(l.Path) == filepath.Clean(r.volumeDir) {
		if err := os.RemoveAll(l.Path); err != nil {
			return ctrl.Result{}, err
		}
		ctrl.LoggerFrom(ctx).Info("removed the directory of released volume", "volume", pv.Name, "path", l.Path)
	}
	// The UID precondition keeps us from deleting a volume recreated under the same name.
	if err := r.Delete(ctx, &pv, client.Preconditions{UID: &pv.UID}); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("deleted released volume", "volume", pv.Name)
	return ctrl.Result{}, nil
}
