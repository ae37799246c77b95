package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/operator-workshops/workshop/operators/common/apply"
	"github.com/operator-workshops/workshop/operators/common/labels"
	"github.com/operator-workshops/workshop/operators/common/pods"
	"github.com/operator-workshops/workshop/operators/common/podsecurity"
	dbv1 "github.com/operator-workshops/workshop/operators/database/api/v1"
)

// engine is what differs between the database types.
type engine struct {
	image   string
	port    int32
	dataDir string
	// uid is the unprivileged user the official image runs its server as,
	// so the Pod can meet the restricted Pod Security Standard.
	uid int64
}

var engines = map[dbv1.Type]engine{
	dbv1.Mongo: {image: "mongo:4.0", port: 27017, dataDir: "/data/db", uid: 999},
	dbv1.MySQL: {image: "mysql:8.0", port: 3306, dataDir: "/var/lib/mysql", uid: 999},
}

// DefaultImage returns the image a Database of type t runs when neither its
// spec nor the operator's flags name one.
func DefaultImage(t dbv1.Type) string { return engines[t].image }

// DefaultRequests are what a Database's server requests of its node when
// the operator's flags say nothing else (--server-cpu-request,
// --server-memory-request).
var DefaultRequests = pods.NewRequests("100m", "256Mi")

// podFor returns the Pod of db, running image and requesting requests.
// password names the Secret key with the mysql root password; it is nil for
// mongo.
func podFor(db *dbv1.Database, image string, password *dbv1.SecretKeyRef, owner *metav1ac.OwnerReferenceApplyConfiguration,
	requests pods.Requests) *corev1ac.PodApplyConfiguration {
	e := engines[db.Spec.Type]
	name := string(db.Spec.Type)
	container := corev1ac.Container().
		WithName(name).
		WithImage(image).
		WithPorts(corev1ac.ContainerPort().WithName(name).WithContainerPort(e.port).WithProtocol(corev1.ProtocolTCP)).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("data").WithMountPath(e.dataDir)).
		WithReadinessProbe(corev1ac.Probe().
			WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromInt32(e.port))).
			WithPeriodSeconds(5)).
		WithSecurityContext(podsecurity.ContainerApply())
	if password != nil {
		container.WithEnv(corev1ac.EnvVar().WithName("MYSQL_ROOT_PASSWORD").WithValueFrom(
			corev1ac.EnvVarSource().WithSecretKeyRef(
				corev1ac.SecretKeySelector().WithName(password.Name).WithKey(password.Key))))
	}
	spec := corev1ac.PodSpec().
		WithContainers(container).
		// A database never talks to the API server: no token to steal.
		WithAutomountServiceAccountToken(false).
		WithVolumes(corev1ac.Volume().WithName("data").WithEmptyDir(corev1ac.EmptyDirVolumeSource())).
		WithSecurityContext(podsecurity.PodApply(e.uid))

	// The hash leaves the requests out: they are the operator's, and a
	// change of its flags must not replace running databases, whose data
	// lives in the pod. Pods made from then on request the new values.
	hash := apply.SpecHash(spec)
	if r := requests.Apply(); r != nil {
		spec.Containers[0].WithResources(r)
	}
	return corev1ac.Pod(db.Name, db.Namespace).
		WithLabels(labels.Standard(appName, db.Name, FieldOwner)).
		WithAnnotations(map[string]string{podSpecHashAnnotation: hash}).
		WithOwnerReferences(owner).
		WithSpec(spec)
}

// serviceFor returns the NodePort Service of db. It selects db's Pod only:
// the workshop's `app: db` selector sent every database's traffic to every
// database Pod.
func serviceFor(db *dbv1.Database, owner *metav1ac.OwnerReferenceApplyConfiguration) *corev1ac.ServiceApplyConfiguration {
	e := engines[db.Spec.Type]
	name := string(db.Spec.Type)
	return corev1ac.Service(db.Name, db.Namespace).
		WithLabels(labels.Standard(appName, db.Name, FieldOwner)).
		WithOwnerReferences(owner).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeNodePort).
			WithSelector(labels.Selector(appName, db.Name)).
			WithPorts(corev1ac.ServicePort().
				WithName(name).
				WithProtocol(corev1.ProtocolTCP).
				WithPort(e.port).
				WithTargetPort(intstr.FromInt32(e.port))))
}
