package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/operator-workshops/workshop/operators/common/labels"
	"github.com/operator-workshops/workshop/operators/common/podsecurity"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
	"github.com/operator-workshops/workshop/operators/mysql-backup/internal/scripts"
)

// childLabels are the labels of every child of m.
func childLabels(m *mysqlv1.MySQL) map[string]string {
	l := labels.Standard(appName, m.Name, FieldOwner)
	l[mysqlLabel] = m.Name
	return l
}

// dataPVC is the server's volume, owned by m.
func dataPVC(m *mysqlv1.MySQL, owner *metav1ac.OwnerReferenceApplyConfiguration) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	return corev1ac.PersistentVolumeClaim(dataPVCName(m.Name), m.Namespace).
		WithLabels(childLabels(m)).
		WithOwnerReferences(owner).
		WithSpec(pvcSpec(m))
}

// backupPVC is the volume of the backups. m does not own it: backups must
// outlive the MySQL they were taken from, so that the next MySQL of the same
// name restores them.
func backupPVC(m *mysqlv1.MySQL) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: backupPVCName(m.Name), Namespace: m.Namespace, Labels: childLabels(m)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: m.Spec.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: m.Spec.StorageSize},
			},
		},
	}
}

func pvcSpec(m *mysqlv1.MySQL) *corev1ac.PersistentVolumeClaimSpecApplyConfiguration {
	spec := corev1ac.PersistentVolumeClaimSpec().
		WithAccessModes(corev1.ReadWriteOnce).
		WithResources(corev1ac.VolumeResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceStorage: m.Spec.StorageSize}))
	if m.Spec.StorageClassName != nil {
		spec.WithStorageClassName(*m.Spec.StorageClassName)
	}
	return spec
}

// deployment runs the server: one replica, and Recreate so that two servers
// never share the data volume. passwordHash rolls the pod when the password
// changes.
func deployment(m *mysqlv1.MySQL, passwordHash string, owner *metav1ac.OwnerReferenceApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
	podLabels := childLabels(m)
	podLabels[homeworkAppLabel] = m.Name
	container := corev1ac.Container().
		WithName("mysql").
		WithImage(m.Spec.Image).
		WithEnv(
			corev1ac.EnvVar().WithName("MYSQL_ROOT_PASSWORD").WithValueFrom(credentialsRef(m, keyPassword)),
			corev1ac.EnvVar().WithName("MYSQL_DATABASE").WithValue(m.Spec.Database),
		).
		WithPorts(corev1ac.ContainerPort().WithName("mysql").WithContainerPort(mysqlPort)).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("data").WithMountPath("/var/lib/mysql")).
		// mysqladmin ping answers without credentials once the server
		// accepts connections.
		WithReadinessProbe(corev1ac.Probe().
			WithExec(corev1ac.ExecAction().WithCommand("mysqladmin", "ping", "-h", "127.0.0.1", "--silent")).
			WithPeriodSeconds(5).WithTimeoutSeconds(3)).
		WithSecurityContext(podsecurity.ContainerApply())
	return appsv1ac.Deployment(m.Name, m.Namespace).
		WithLabels(childLabels(m)).
		WithOwnerReferences(owner).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels.Selector(appName, m.Name))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(podLabels).
				WithAnnotations(map[string]string{passwordHashAnnotation: passwordHash}).
				WithSpec(corev1ac.PodSpec().
					WithContainers(container).
					WithVolumes(corev1ac.Volume().WithName("data").
						WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(dataPVCName(m.Name)))).
					WithSecurityContext(podsecurity.PodApply(mysqlUID)))))
}

// service is the server's address for clients and for the Jobs.
func service(m *mysqlv1.MySQL, owner *metav1ac.OwnerReferenceApplyConfiguration) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(m.Name, m.Namespace).
		WithLabels(childLabels(m)).
		WithOwnerReferences(owner).
		WithSpec(corev1ac.ServiceSpec().
			WithSelector(labels.Selector(appName, m.Name)).
			WithPorts(corev1ac.ServicePort().WithName("mysql").WithPort(mysqlPort).WithTargetPort(intstr.FromInt32(mysqlPort))))
}

func credentialsRef(m *mysqlv1.MySQL, key string) *corev1ac.EnvVarSourceApplyConfiguration {
	return corev1ac.EnvVarSource().WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(credentialsName(m.Name)).WithKey(key))
}

// job returns a Job that runs script against m's server. The passwords come
// from the credentials Secret as environment variables: never in the
// arguments, where `kubectl describe` and the process list would show them.
func job(m *mysqlv1.MySQL, deadline time.Duration, name, script string, extraEnv ...corev1.EnvVar) *batchv1.Job {
	secret := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: credentialsName(m.Name)}, Key: key,
		}}
	}
	env := append([]corev1.EnvVar{
		{Name: scripts.EnvHost, Value: m.Name},
		{Name: scripts.EnvPort, Value: strconv.Itoa(mysqlPort)},
		{Name: scripts.EnvUser, Value: "root"},
		{Name: scripts.EnvPassword, ValueFrom: secret(keyPassword)},
		{Name: scripts.EnvDatabase, Value: m.Spec.Database},
		{Name: scripts.EnvBackupDir, Value: "/backup"},
	}, extraEnv...)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: m.Namespace, Labels: childLabels(m)},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](2),
			ActiveDeadlineSeconds: ptr.To(int64(deadline.Seconds())),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: childLabels(m)},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:                     "job",
						Image:                    m.Spec.Image,
						Command:                  scripts.Command(script),
						Env:                      env,
						VolumeMounts:             []corev1.VolumeMount{{Name: "backup", MountPath: "/backup"}},
						TerminationMessagePolicy: corev1.TerminationMessageReadFile,
						SecurityContext:          podsecurity.Container(),
					}},
					Volumes: []corev1.Volume{{Name: "backup", VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: backupPVCName(m.Name)},
					}}},
					SecurityContext: podsecurity.Pod(ptr.To[int64](mysqlUID)),
				},
			},
		},
	}
}

// restoreJob loads the latest backup, if any, into a new server. A new
// server may take minutes to initialise its data directory, and the Job
// waits for it.
func restoreJob(m *mysqlv1.MySQL, deadline time.Duration) *batchv1.Job {
	return job(m, deadline, restoreJobName(m.Name), scripts.Restore, corev1.EnvVar{Name: scripts.EnvWaitTimeout, Value: "300"})
}

// backupJob dumps the database before m goes. It carries m's UID, since it
// outlives m and the next MySQL of the same name must tell it apart.
func backupJob(m *mysqlv1.MySQL, deadline time.Duration) *batchv1.Job {
	j := job(m, deadline, backupJobName(m.Name), scripts.Backup)
	j.Annotations = map[string]string{uidAnnotation: string(m.UID)}
	return j
}

// passwordJob sets the pending password in the running server.
func passwordJob(m *mysqlv1.MySQL, deadline time.Duration, pendingHash string) *batchv1.Job {
	j := job(m, deadline, passwordJobName(m.Name), scripts.Password, corev1.EnvVar{
		Name: scripts.EnvNewPassword,
		ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: credentialsName(m.Name)}, Key: keyPendingPassword,
		}},
	})
	j.Annotations = map[string]string{passwordHashAnnotation: pendingHash}
	return j
}

// hash is a short digest of a password, salted with m's UID so that equal
// passwords of two MySQLs do not show as equal hashes.
func hash(m *mysqlv1.MySQL, password string) string {
	sum := sha256.Sum256([]byte(string(m.UID) + ":" + password))
	return hex.EncodeToString(sum[:8])
}
