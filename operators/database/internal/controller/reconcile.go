package controller

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/labels"
	"github.com/operator-workshops/workshop/operators/common/pods"
	"github.com/operator-workshops/workshop/operators/common/secrets"
	dbv1 "github.com/operator-workshops/workshop/operators/database/api/v1"
)

// observed is what a pass saw of the children, for summarize.
type observed struct {
	// pod is the Pod as last read, nil when it was just created.
	pod *corev1.Pod
	// nodePort is the port the API server allocated to the Service.
	nodePort int32
	// created says the pass created a child: its watch event brings the
	// Database back, and that pass writes the status (reconciler.Settling).
	created bool
}

// reconcileChildren creates or repairs the Secret, the Pod and the Service,
// and returns what they look like. What it created is told in one Event: an
// Event is an API write, and a person wants one line per decision.
func (r *DatabaseReconciler) reconcileChildren(ctx context.Context, db *dbv1.Database) (o observed, _ ctrl.Result, err error) {
	ref, err := apply.ControllerReference(db, r.Scheme())
	if err != nil {
		return o, ctrl.Result{}, err
	}
	var made []string
	defer func() {
		if len(made) > 0 {
			r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, "Created", "Create", "Created %s", strings.Join(made, ", "))
		}
	}()
	password, err := r.reconcileSecret(ctx, db, &made)
	if err != nil {
		return o, ctrl.Result{}, err
	}
	if o.pod, err = r.reconcilePod(ctx, db, password, ref, &made); err != nil {
		return o, ctrl.Result{}, err
	}
	o.nodePort, err = r.reconcileService(ctx, db, ref, &made)
	o.created = len(made) > 0
	return o, ctrl.Result{}, err
}

// rootPasswordRef is the Secret key that holds the mysql root password: the
// spec's, or the one the operator generates (generated); nil for mongo.
func rootPasswordRef(db *dbv1.Database) (ref *dbv1.SecretKeyRef, generated bool) {
	if db.Spec.Type != dbv1.MySQL {
		return nil, false
	}
	if ref := db.Spec.RootPasswordSecretRef; ref != nil {
		return ref, false
	}
	return &dbv1.SecretKeyRef{Name: db.Name + generatedSecretSuffix, Key: defaultSecretKey}, true
}

// reconcileSecret returns the Secret key that holds the mysql root password,
// generating the Secret when the spec names none. It returns nil for mongo.
// What it creates it adds to made.
func (r *DatabaseReconciler) reconcileSecret(ctx context.Context, db *dbv1.Database, made *[]string) (*dbv1.SecretKeyRef, error) {
	ref, generated := rootPasswordRef(db)
	if ref == nil {
		return nil, nil
	}

	const what = "the root password"
	if !generated {
		if _, err := r.Secrets.Key(ctx, r.secretReads, db.Namespace, ref.Name, ref.Key, what,
			"remove spec.rootPasswordSecretRef to let the operator generate one"); err != nil {
			return nil, err
		}
		return ref, nil
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: db.Namespace}}
	exists, err := apply.Claim(ctx, r.secretReads, nil, db, secret, apply.ControlledBy(db))
	switch {
	case errors.As(err, new(*conditions.Blocked)):
		return nil, conditions.NameConflictAdvising("Secret", ref.Name, "Database", db.Name,
			"Delete it, or name it in spec.rootPasswordSecretRef")
	case err != nil:
		return nil, err
	case !exists:
		if err := r.serverWithoutSecret(ctx, db, ref); err != nil {
			return nil, err
		}
		return ref, r.createPasswordSecret(ctx, db, ref, made)
	}
	if _, err := secrets.Value(secret, ref.Key, what); err != nil {
		return nil, err
	}
	return ref, nil
}

// serverWithoutSecret returns a Blocked error when the Database's Pod runs
// a server started with the generated Secret ref, which is gone: a new
// random password would not be the server's, and clients reading the
// Secret would be refused. Only a new server takes a new password.
func (r *DatabaseReconciler) serverWithoutSecret(ctx context.Context, db *dbv1.Database, ref *dbv1.SecretKeyRef) error {
	pod := &corev1.Pod{}
	err := apply.Get(ctx, r.Client, r.APIReader, client.ObjectKeyFromObject(db), pod)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case !metav1.IsControlledBy(pod, db) || !pod.DeletionTimestamp.IsZero() || pods.Ended(pod):
		return nil // no server of the Database's runs
	}
	return conditions.Block(ReasonPasswordLost,
		"Secret %q, which held the root password Pod %q was started with, was deleted: no Secret holds the server's password now, "+
			"and a new one would not be it. Delete Pod %q to start a new server (empty: a Database keeps no volume) with a new generated password",
		ref.Name, pod.Name, pod.Name)
}

// createPasswordSecret stores a random root password. The Secret is only
// ever created, never applied: applying would replace the password a running
// server was initialised with.
func (r *DatabaseReconciler) createPasswordSecret(ctx context.Context, db *dbv1.Database, ref *dbv1.SecretKeyRef, made *[]string) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ref.Name,
			Namespace: db.Namespace,
			Labels:    labels.Standard(appName, db.Name, FieldOwner),
		},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{ref.Key: rand.Text()},
	}
	if err := controllerutil.SetControllerReference(db, secret, r.Scheme()); err != nil {
		return err
	}
	if err := r.Create(ctx, secret, client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("creating Secret %s: %w", ref.Name, err)
	}
	r.secretReads.Remember(secret)
	*made = append(*made, fmt.Sprintf("Secret %s with a generated root password", ref.Name))
	return nil
}

// reconcilePod creates the Pod, and replaces it when it failed, ended, or was
// built from another spec. It returns the Pod as last read, nil when absent.
func (r *DatabaseReconciler) reconcilePod(ctx context.Context, db *dbv1.Database, password *dbv1.SecretKeyRef, ref *metav1ac.OwnerReferenceApplyConfiguration, made *[]string) (*corev1.Pod, error) {
	image := db.Spec.Image
	if image == "" {
		image = r.Images[db.Spec.Type]
	}
	if image == "" {
		image = DefaultImage(db.Spec.Type)
	}
	desired := podFor(db, image, password, ref, r.Requests)

	// A Pod is only ever created, and replaced whole: one the cache
	// misses is created, and read from the API server only when the name
	// is taken.
	create := &corev1.Pod{}
	if err := apply.Decode(desired, create); err != nil {
		return nil, err
	}
	pod := &corev1.Pod{}
	created, err := owner.CreateOwned(ctx, r.Client, r.APIReader, db, create, pod, apply.ControlledBy(db))
	switch {
	case err != nil:
		return nil, err
	case created:
		*made = append(*made, fmt.Sprintf("Pod %s (%s)", db.Name, image))
		return nil, nil
	}
	if !pod.DeletionTimestamp.IsZero() {
		return pod, nil // the delete event brings us back to create the new one
	}
	why := ""
	switch {
	case pods.Ended(pod):
		why = fmt.Sprintf("it ended (phase %s, %s)", pod.Status.Phase, pod.Status.Reason)
	case pod.Annotations[podSpecHashAnnotation] != desired.Annotations[podSpecHashAnnotation]:
		why = "the Database spec changed"
	}
	if why == "" {
		return pod, nil
	}
	if !pods.Ended(pod) {
		// It serves: ask before destroying it.
		if err := pods.Admitted(ctx, r.Client, db.Namespace, db.Name+"-", desired); err != nil {
			return pod, err
		}
	}
	if err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	r.Recorder.Eventf(db, pod, corev1.EventTypeWarning, "Recreating", "DeletePod", "Pod %s is replaced because %s", pod.Name, why)
	now := metav1.Now()
	pod.DeletionTimestamp = &now // report it as terminating
	return pod, nil
}

// reconcileService applies the NodePort Service, unless the cache shows it
// as the last apply left it, and returns the NodePort the API server
// allocated: read from the apply response (the cache may not have seen the
// Service yet), else from the Service the cache holds.
func (r *DatabaseReconciler) reconcileService(ctx context.Context, db *dbv1.Database, ref *metav1ac.OwnerReferenceApplyConfiguration, made *[]string) (int32, error) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: db.Name, Namespace: db.Namespace}}
	exists, err := apply.Claim(ctx, r.Client, r.APIReader, db, svc, apply.ControlledBy(db))
	if err != nil {
		return 0, err
	}
	created := !exists
	applied := serviceFor(db, ref)
	sent, err := owner.ApplyChanged(ctx, r.Client, applied, svc)
	if err != nil {
		return 0, err
	}
	var port int32
	if ports := applied.Spec.Ports; sent && len(ports) > 0 && ports[0].NodePort != nil {
		port = *ports[0].NodePort
	}
	if ports := svc.Spec.Ports; !sent && len(ports) > 0 {
		port = ports[0].NodePort
	}
	if created {
		*made = append(*made, fmt.Sprintf("NodePort Service %s on port %d", db.Name, port))
	}
	return port, nil
}
