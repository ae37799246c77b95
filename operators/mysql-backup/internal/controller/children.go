package controller

import (
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/operator-workshops/workshop/operators/common/labels"
	"github.com/operator-workshops/workshop/operators/common/pods"
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

// componentLabels are childLabels for one component: the server, or one of
// the Jobs, whose pods must never be taken for the server.
func componentLabels(m *mysqlv1.MySQL, component string) map[string]string {
	l := childLabels(m)
	l[labels.Component] = component
	return l
}

// serverSelector selects m's server pods, and no Job's.
func serverSelector(m *mysqlv1.MySQL) map[string]string {
	l := labels.Selector(appName, m.Name)
	l[labels.Component] = componentServer
	return l
}

// serviceSelector selects m's server pods once they serve clients, that is
// once the restore is done.
func serviceSelector(m *mysqlv1.MySQL) map[string]string {
	l := serverSelector(m)
	l[servingLabel] = "true"
	return l
}

// ownAnnotations mark an object as made for m (see uidAnnotation).
func ownAnnotations(m *mysqlv1.MySQL) map[string]string {
	return map[string]string{uidAnnotation: string(m.UID)}
}

// dataPVC is the server's volume. Like the Deployment, the Service and the
// credentials, it has no owner reference: the operator deletes it itself,
// after the backup (see finalize). It carries the marks of its
// history.
func dataPVC(m *mysqlv1.MySQL, mk marks) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	a := ownAnnotations(m)
	maps.Copy(a, mk.annotations())
	return corev1ac.PersistentVolumeClaim(dataPVCName(m.Name), m.Namespace).
		WithLabels(childLabels(m)).
		WithAnnotations(a).
		WithSpec(pvcSpec(m))
}

// marks are what the operator records on a data volume of the data it
// holds: what its restore loaded, once done (restoredAnnotation), that a
// server's container started on it (startedAnnotation), and the backup
// volume's room its restore Job measured (spaceAnnotation).
type marks struct {
	restoredFrom string
	started      bool
	space        room
}

// marksOf reads the marks of data volume pvc.
func marksOf(pvc *corev1.PersistentVolumeClaim) marks {
	return marks{restoredFrom: pvc.Annotations[restoredAnnotation], started: pvc.Annotations[startedAnnotation] == "true",
		space: roomOf(pvc.Annotations[spaceAnnotation])}
}

// annotations are the marks as the volume's annotations.
func (mk marks) annotations() map[string]string {
	a := map[string]string{}
	if mk.restoredFrom != "" {
		a[restoredAnnotation] = mk.restoredFrom
	}
	if mk.started {
		a[startedAnnotation] = "true"
	}
	if s := mk.space.annotation(); s != "" {
		a[spaceAnnotation] = s
	}
	return a
}

// backupPVC is the volume of the backups. The operator never deletes it:
// backups must outlive the MySQL they were taken from, so that the next
// MySQL of the same name restores them.
func backupPVC(m *mysqlv1.MySQL) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: backupPVCName(m.Name), Namespace: m.Namespace, Labels: childLabels(m),
			Annotations: map[string]string{backupOfAnnotation: m.Name}},
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
// never share the data volume. serving labels its pods for the Service in
// the template, as release 0.2.0 did once the restore was done (now the
// operator labels the pods themselves: markServing); passwordVersion rolls
// them when the password changed. The server requests requests of its
// node; new requests roll the server too (its data is on its volume).
func deployment(m *mysqlv1.MySQL, serving bool, passwordVersion string, requests pods.Requests) *appsv1ac.DeploymentApplyConfiguration {
	podLabels := componentLabels(m, componentServer)
	podLabels[homeworkAppLabel] = m.Name
	if serving {
		podLabels[servingLabel] = "true"
	}
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
	if r := requests.Apply(); r != nil {
		container.WithResources(r)
	}
	return appsv1ac.Deployment(m.Name, m.Namespace).
		WithLabels(componentLabels(m, componentServer)).
		WithAnnotations(ownAnnotations(m)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(serverSelector(m))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(podLabels).
				WithAnnotations(map[string]string{passwordVersionAnnotation: passwordVersion}).
				WithSpec(corev1ac.PodSpec().
					WithAutomountServiceAccountToken(false).
					WithContainers(container).
					WithVolumes(corev1ac.Volume().WithName("data").
						WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(dataPVCName(m.Name)))).
					WithSecurityContext(podsecurity.PodApply(mysqlUID)))))
}

// service is the server's address for clients and for the backup and
// password Jobs. It selects the server once it serves, never a Job.
func service(m *mysqlv1.MySQL) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(m.Name, m.Namespace).
		WithLabels(componentLabels(m, componentServer)).
		WithAnnotations(ownAnnotations(m)).
		WithSpec(corev1ac.ServiceSpec().
			WithSelector(serviceSelector(m)).
			WithPorts(corev1ac.ServicePort().WithName("mysql").WithPort(mysqlPort).WithTargetPort(intstr.FromInt32(mysqlPort))))
}

// credentialsSecret is the Secret with the password the server was created with.
func credentialsSecret(m *mysqlv1.MySQL, password string) *corev1.Secret {
	a := ownAnnotations(m)
	a[passwordVersionAnnotation] = "1"
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: credentialsName(m.Name), Namespace: m.Namespace, Labels: childLabels(m), Annotations: a},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{keyPassword: []byte(password)},
	}
}

func credentialsRef(m *mysqlv1.MySQL, key string) *corev1ac.EnvVarSourceApplyConfiguration {
	return corev1ac.EnvVarSource().WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(credentialsName(m.Name)).WithKey(key))
}

// secretEnv is an environment variable read from key of m's credentials;
// an optional one is empty when the key is absent.
func secretEnv(m *mysqlv1.MySQL, name, key string, optional bool) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: credentialsName(m.Name)}, Key: key, Optional: ptr.To(optional),
	}}}
}

// jobSpec is what differs between the Jobs.
type jobSpec struct {
	name, component, script string
	// host is where the Job finds the server: the address of the pod the
	// operator's Deployment runs, never the Service, whose label selector
	// any pod of the namespace can match.
	host string
	// env: the passwords and the script's own settings.
	env []corev1.EnvVar
	// backup is how the Job mounts the backup volume.
	backup backupMount
}

// backupMount is how a Job mounts the backup volume: a pod that mounts it
// holds it, ended or not, while a person deletes it, so a Job that needs
// no backup mounts none.
type backupMount int

const (
	backupReadWrite backupMount = iota
	backupReadOnly
	backupNone
)

// job returns a Job that runs js.script against m's server. The passwords
// come from the credentials Secret as environment variables: never in the
// arguments, where `kubectl describe` and the process list would show them.
func job(m *mysqlv1.MySQL, o jobOptions, js jobSpec) *batchv1.Job {
	env := []corev1.EnvVar{
		{Name: scripts.EnvHost, Value: js.host},
		{Name: scripts.EnvPort, Value: strconv.Itoa(mysqlPort)},
		{Name: scripts.EnvUser, Value: "root"},
		{Name: scripts.EnvDatabase, Value: m.Spec.Database},
	}
	var mounts []corev1.VolumeMount
	var volumes []corev1.Volume
	if js.backup != backupNone {
		env = append(env, corev1.EnvVar{Name: scripts.EnvBackupDir, Value: "/backup"})
		mounts = []corev1.VolumeMount{{Name: "backup", MountPath: "/backup", ReadOnly: js.backup == backupReadOnly}}
		volumes = []corev1.Volume{{Name: "backup", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: backupPVCName(m.Name)},
		}}}
	}
	env = append(append(env, corev1.EnvVar{Name: scripts.EnvWaitTimeout, Value: jobWaitSeconds}), js.env...)
	l := componentLabels(m, js.component)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: js.name, Namespace: m.Namespace, Labels: l, Annotations: ownAnnotations(m)},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](2),
			ActiveDeadlineSeconds: ptr.To(int64(o.deadline.Seconds())),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(l)},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					Containers: []corev1.Container{{
						Name:                     "job",
						Image:                    m.Spec.Image,
						Command:                  scripts.Command(js.script),
						Env:                      env,
						VolumeMounts:             mounts,
						TerminationMessagePolicy: corev1.TerminationMessageReadFile,
						SecurityContext:          podsecurity.Container(),
						Resources:                corev1.ResourceRequirements{Requests: o.requests.List()},
					}},
					Volumes:         volumes,
					SecurityContext: podsecurity.Pod(ptr.To[int64](mysqlUID)),
				},
			},
		},
	}
}

// loginEnv gives a backup or restore Job both passwords the server may
// have: the confirmed one, and the one a password Job may have set.
func loginEnv(m *mysqlv1.MySQL) []corev1.EnvVar {
	return []corev1.EnvVar{
		secretEnv(m, scripts.EnvPassword, keyPassword, false),
		secretEnv(m, scripts.EnvPasswordAlt, keyPendingPassword, true),
	}
}

// restoreJob loads the latest backup, if any (or the dump the MySQL's
// RestoreFromAnnotation names), into the new server on data volume
// volume. It reaches the server at its pod's address: the Service admits
// no client until the restore is done.
func restoreJob(m *mysqlv1.MySQL, o jobOptions, server *corev1.Pod, volume types.UID) *batchv1.Job {
	env := append(loginEnv(m), corev1.EnvVar{Name: scripts.EnvRestoreID, Value: string(volume)})
	if from := m.Annotations[mysqlv1.RestoreFromAnnotation]; from != "" {
		env = append(env, corev1.EnvVar{Name: scripts.EnvRestoreFrom, Value: from})
	}
	j := job(m, o, jobSpec{
		name: restoreJobName(m.Name), component: componentRestore, script: scripts.Restore,
		host: server.Status.PodIP, env: env,
	})
	j.Annotations[dataVolumeAnnotation] = string(volume)
	j.Annotations[serverPodAnnotation] = string(server.UID)
	return j
}

// backupPlan says where a backup goes and whether it may become the latest.
type backupPlan struct {
	// host of the server (see jobSpec.host).
	host string
	// latestExpected is the dump the server was restored from ("none" for
	// none, or for a restore not known to have loaded anything), "" for a
	// backup that becomes latest whatever latest names: the new dump
	// becomes latest only if latest still names it, so latest only moves
	// forward.
	latestExpected string
}

// backupJob dumps the database before m goes. It is not owned by m, whose
// deletion it must outlive, and it carries m's UID, since the next MySQL of
// the same name must tell it apart.
func backupJob(m *mysqlv1.MySQL, o jobOptions, p backupPlan) *batchv1.Job {
	env := loginEnv(m)
	keep := m.Spec.BackupsToKeep
	if keep <= 0 {
		keep = mysqlv1.DefaultBackupsToKeep
	}
	env = append(env, corev1.EnvVar{Name: scripts.EnvKeepBackups, Value: strconv.Itoa(int(keep))})
	if p.latestExpected != "" {
		env = append(env, corev1.EnvVar{Name: scripts.EnvLatestExpected, Value: p.latestExpected})
	}
	return job(m, o, jobSpec{
		name: backupJobName(m.Name), component: componentBackup, script: scripts.Backup,
		host: p.host, env: env,
	})
}

// verifyJob checks, after backup Job backup succeeded, that the dump it
// reported (res) is on the backup volume volume as reported: a Job of its
// own, which mounts the volume read-only and needs no password. Like the
// backup Job it has no owner reference (a foreground deletion of m would
// delete it at once); the operator deletes it once the backup counts.
func verifyJob(m *mysqlv1.MySQL, o jobOptions, backup *batchv1.Job, res scripts.Result, volume types.UID) *batchv1.Job {
	j := job(m, o, jobSpec{name: verifyJobName(m.Name), component: componentVerify, script: scripts.Verify, backup: backupReadOnly})
	env := []corev1.EnvVar{
		{Name: scripts.EnvBackupDir, Value: "/backup"},
		{Name: scripts.EnvVerifyDump, Value: res.Dump},
	}
	if res.DumpBytes >= 0 {
		env = append(env, corev1.EnvVar{Name: scripts.EnvVerifySize, Value: strconv.FormatInt(res.DumpBytes, 10)})
	}
	if res.Outcome == scripts.BackedUp {
		env = append(env, corev1.EnvVar{Name: scripts.EnvVerifyLatest, Value: "yes"})
	}
	// Only its own settings: it talks to no server.
	j.Spec.Template.Spec.Containers[0].Env = env
	j.Annotations[backupJobAnnotation] = string(backup.UID)
	j.Annotations[backupVolumeAnnotation] = string(volume)
	return j
}

// passwordJob sets the password under key target of the credentials in the
// running server at host (its pod's address), logging in with it or with
// the other key's: the server has one of the two. version is the
// credentials' resourceVersion.
func passwordJob(m *mysqlv1.MySQL, o jobOptions, host, target, version string) *batchv1.Job {
	other := keyPendingPassword
	if target == keyPendingPassword {
		other = keyPassword
	}
	j := job(m, o, jobSpec{
		name: passwordJobName(m.Name), component: componentPassword, script: scripts.Password,
		host: host, backup: backupNone,
		env: []corev1.EnvVar{
			secretEnv(m, scripts.EnvPassword, other, false),
			secretEnv(m, scripts.EnvNewPassword, target, false),
		},
	})
	j.Annotations[targetAnnotation] = target
	j.Annotations[credentialsVersionAnnotation] = version
	return j
}
