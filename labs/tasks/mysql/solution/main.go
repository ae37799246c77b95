// Command mysql is a reference solution of lab 5's controller task
// (labs/05-mysql-homework.md, section 8), on the starter in ../starter:
// `diff -u labs/tasks/mysql/starter labs/tasks/mysql/solution` shows what it
// adds, the homework's two extra tasks:
//
//   - Task 1, the status: each pass computes the status from what it saw
//     (report), and writes it only when it changed.
//   - Task 2, a password change: the Deployment's MYSQL_ROOT_PASSWORD is the
//     password the server has, since this controller changes it only once
//     the server has the new one. When spec.password differs, a Job
//     (passwordJob) logs in with the old password, through the Service, and
//     sets the new one on root's accounts; when it succeeded, the Deployment
//     takes the new password, which rolls the server's pod (its data is on
//     its volume), and the Job is deleted.
package main

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/operator-workshops/workshop/operators/common/manager"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
)

func main() {
	manager.Main(manager.Operator{
		Name:        "mysql-lab",
		AddToScheme: []func(*runtime.Scheme) error{mysqlv1.AddToScheme},
		Setup: func(mgr ctrl.Manager, _ manager.Options) error {
			// A change of the server's Deployment (its pod ready) or of
			// the password Job (done) reconciles their MySQL too.
			return ctrl.NewControllerManagedBy(mgr).
				For(&mysqlv1.MySQL{}).
				Owns(&appsv1.Deployment{}).
				Owns(&batchv1.Job{}).
				Complete(&reconciler{Client: mgr.GetClient()})
		},
	})
}

type reconciler struct {
	client.Client
}

// Reconcile is called with the namespace and name of a MySQL each time it
// changes, each time its Deployment or Job does, and once for each at
// start.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	m := &mysqlv1.MySQL{}
	if err := r.Get(ctx, req.NamespacedName, m); err != nil {
		// Deleted: the garbage collector deletes what it owned.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	for _, child := range []client.Object{volume(m), service(m), deployment(m, m.Spec.Password)} {
		if err := r.createOnce(ctx, m, child); err != nil {
			return ctrl.Result{}, err
		}
	}
	d := &appsv1.Deployment{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.Name}, d); err != nil {
		return ctrl.Result{}, err
	}
	if !metav1.IsControlledBy(d, m) {
		// Never take over someone else's Deployment of that name.
		err := fmt.Errorf("deployment %s exists and is not this MySQL's: rename or delete it", d.Name)
		return ctrl.Result{}, r.report(ctx, m, state{reason: "NameConflict", message: err.Error()})
	}
	s, err := r.password(ctx, m, d)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.report(ctx, m, s)
}

// createOnce creates child, owned by m, unless it exists.
func (r *reconciler) createOnce(ctx context.Context, m *mysqlv1.MySQL, child client.Object) error {
	if err := controllerutil.SetControllerReference(m, child, r.Scheme()); err != nil {
		return err
	}
	if err := r.Create(ctx, child); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// A state is what a pass found: whether the server answers with the spec's
// password (ready), and if not, why (reason, message).
type state struct {
	ready           bool
	reason, message string
}

// password makes the server's password spec.password (task 2), and says
// where the server stands.
func (r *reconciler) password(ctx context.Context, m *mysqlv1.MySQL, d *appsv1.Deployment) (state, error) {
	job := &batchv1.Job{}
	err := r.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: jobName(m)}, job)
	if err != nil && !apierrors.IsNotFound(err) {
		return state{}, err
	}
	found := err == nil
	if found && !metav1.IsControlledBy(job, m) {
		// Its success would say nothing of this server's password.
		return state{reason: "NameConflict", message: "job " + job.Name + " exists and is not this MySQL's: rename or delete it"}, nil
	}
	// Both as the Deployment keeps them: escaped (envValue).
	has, want := rootPassword(d), envValue(m.Spec.Password)
	if has == want {
		if found {
			// Done with: the Deployment has the password it set.
			if err := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
				return state{}, err
			}
		}
		if !serving(d) {
			return state{reason: "Starting", message: "the server's pod is not ready yet"}, nil
		}
		return state{ready: true, reason: "Serving", message: "the server answers with the password of the spec"}, nil
	}
	next := passwordJob(m, has)
	if found && !equality.Semantic.DeepEqual(job.Spec.Template.Spec.Containers[0].Env, next.Spec.Template.Spec.Containers[0].Env) {
		// A Job for another password (the spec changed again): it goes,
		// and the next pass, when it is gone, starts the right one.
		err := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))
		return state{reason: "ChangingPassword", message: "a password Job for an earlier spec is being deleted"}, client.IgnoreNotFound(err)
	}
	switch {
	case !found && !serving(d):
		// The Job logs in to the server: it waits until it answers.
		return state{reason: "Starting", message: "the server's pod is not ready yet; the password changes once it is"}, nil
	case !found:
		if err := r.createOnce(ctx, m, next); err != nil {
			return state{}, err
		}
		return state{reason: "ChangingPassword", message: "job " + next.Name + " sets the new password"}, nil
	case job.Status.Succeeded > 0:
		// The server has the new password: the Deployment follows, and
		// its pod is replaced with one whose environment says so.
		before := d.DeepCopy()
		setRootPassword(d, want)
		if err := r.Patch(ctx, d, client.MergeFrom(before)); err != nil {
			return state{}, err
		}
		return state{reason: "ChangingPassword", message: "the server has the new password; its pod restarts with it"}, nil
	case jobFailed(job):
		return state{reason: "PasswordChangeFailed", message: "job " + job.Name + " could not set the new password (kubectl logs job/" + job.Name + " says why); the server keeps the old one"}, nil
	default:
		return state{reason: "ChangingPassword", message: "job " + job.Name + " sets the new password"}, nil
	}
}

// report writes s, and what the controller did, to m's status (task 1),
// when that changes it. observedGeneration is the generation of the spec
// the server is as: it stays behind while the password changes.
func (r *reconciler) report(ctx context.Context, m *mysqlv1.MySQL, s state) error {
	before := m.DeepCopy()
	ready := metav1.ConditionFalse
	if s.ready {
		ready = metav1.ConditionTrue
		m.Status.ObservedGeneration = m.Generation
	}
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{
		Type: "Ready", Status: ready, Reason: s.reason, Message: s.message, ObservedGeneration: m.Status.ObservedGeneration,
	})
	if m.Status.Message == "" {
		m.Status.Message = m.Name + " created" // as the homework's create handler said
	}
	if equality.Semantic.DeepEqual(before.Status, m.Status) {
		return nil // every write costs: none when nothing changed
	}
	return r.Status().Patch(ctx, m, client.MergeFrom(before))
}

// serving says whether the server's pod, as the Deployment is now, is
// ready.
func serving(d *appsv1.Deployment) bool {
	return d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == 1 && d.Status.ReadyReplicas == 1
}

// rootPassword is the MYSQL_ROOT_PASSWORD of the Deployment's server, as
// the Deployment keeps it.
func rootPassword(d *appsv1.Deployment) string {
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "MYSQL_ROOT_PASSWORD" {
			return e.Value
		}
	}
	return ""
}

// setRootPassword sets the MYSQL_ROOT_PASSWORD of the Deployment's server
// to value, escaped as envValue escapes it.
func setRootPassword(d *appsv1.Deployment, value string) {
	env := d.Spec.Template.Spec.Containers[0].Env
	for i := range env {
		if env[i].Name == "MYSQL_ROOT_PASSWORD" {
			env[i].Value = value
		}
	}
}

// jobName names m's password Job.
func jobName(m *mysqlv1.MySQL) string { return "password-" + m.Name }

// passwordJob logs in to m's server through its Service as root with the
// password it has (has, escaped as the Deployment keeps it), and sets spec.password on root's accounts, both or
// neither. The passwords are in its environment, as the homework's are in
// its spec: the sample mysql-with-secret.yaml shows the better way.
func passwordJob(m *mysqlv1.MySQL, has string) *batchv1.Job {
	alter := fmt.Sprintf("ALTER USER IF EXISTS 'root'@'%%' IDENTIFIED BY %[1]s, 'root'@'localhost' IDENTIFIED BY %[1]s", sqlString(m.Spec.Password))
	retries := int32(2)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: jobName(m), Namespace: m.Namespace},
		Spec: batchv1.JobSpec{
			BackoffLimit: &retries,
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:  "password",
						Image: m.Spec.Image, // its client
						// The client reads the password it logs in with
						// from MYSQL_PWD; Kubernetes puts $(ALTER) in the
						// command.
						Command: []string{"mysql", "-h", m.Name, "-u", "root", "-e", "$(ALTER)"},
						Env: []corev1.EnvVar{
							{Name: "MYSQL_PWD", Value: has},
							{Name: "ALTER", Value: envValue(alter)},
						},
					}},
				},
			},
		},
	}
}

// jobFailed says whether job gave up.
func jobFailed(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// sqlString quotes s as a MySQL string literal.
func sqlString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", "''").Replace(s) + "'"
}

// labels mark the server's pods with the name of their MySQL, as the
// homework's template did (app: <name>).
func labels(m *mysqlv1.MySQL) map[string]string { return map[string]string{"app": m.Name} }

// volume is the server's data volume, <name>-pvc, of spec.storage_size.
func volume(m *mysqlv1.MySQL) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name + "-pvc", Namespace: m.Namespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: m.Spec.StorageSize},
			},
		},
	}
}

// service is how clients reach the server: <name>:3306.
func service(m *mysqlv1.MySQL) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace},
		Spec: corev1.ServiceSpec{
			Selector: labels(m),
			Ports:    []corev1.ServicePort{{Name: "mysql", Port: 3306, TargetPort: intstr.FromInt32(3306)}},
		},
	}
}

// deployment is the server, <name>, with the root password password: one
// replica, replaced by Recreate so that two servers never share the data
// volume. Its pod is ready once the server accepts connections.
func deployment(m *mysqlv1.MySQL, password string) *appsv1.Deployment {
	one := int32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels(m)},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels(m)},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:  "mysql",
						Image: m.Spec.Image,
						Env: []corev1.EnvVar{
							{Name: "MYSQL_ROOT_PASSWORD", Value: envValue(password)},
							{Name: "MYSQL_DATABASE", Value: m.Spec.Database},
						},
						Ports:        []corev1.ContainerPort{{Name: "mysql", ContainerPort: 3306}},
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/mysql"}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
								Command: []string{"mysqladmin", "ping", "-h", "127.0.0.1", "--silent"},
							}},
							PeriodSeconds: 5,
						},
					}},
					Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: m.Name + "-pvc"},
					}}},
				},
			},
		},
	}
}

// envValue is s as the value of a container's environment variable:
// Kubernetes reads $(NAME) there as another variable, and $$ as $.
func envValue(s string) string { return strings.ReplaceAll(s, "$", "$$") }
