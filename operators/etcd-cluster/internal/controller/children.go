package controller

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"k8s.io/utils/ptr"

	"github.com/operator-workshops/workshop/operators/common/labels"
	"github.com/operator-workshops/workshop/operators/common/pods"
	"github.com/operator-workshops/workshop/operators/common/podsecurity"
	etcdv1 "github.com/operator-workshops/workshop/operators/etcd-cluster/api/v1beta2"
	"github.com/operator-workshops/workshop/operators/etcd-cluster/internal/membership"
)

// memberUID is the unprivileged user etcd runs as. etcd needs no privilege:
// its ports are above 1024 and its data is on a volume the pod's group owns.
const memberUID = 1000

// defaultVolumeSize is a member's volume when the pod policy names none.
var defaultVolumeSize = resource.MustParse("1Gi")

// Image is the etcd image of c: repository:v<version>, as the coreos operator
// named it (quay.io/coreos/etcd:v3.2.13).
func Image(c *etcdv1.EtcdCluster) string {
	return c.Spec.Repository + ":v" + strings.TrimPrefix(c.Spec.Version, "v")
}

// selector selects the member pods of cluster, with the coreos labels the
// workshop queries.
func selector(cluster string) map[string]string {
	return map[string]string{appLabel: appValue, clusterLabel: cluster}
}

// childLabels are the labels of every child of c: the standard ones plus the
// selector.
func childLabels(c *etcdv1.EtcdCluster) map[string]string {
	l := labels.Standard(appName, c.Name, FieldOwner)
	maps.Copy(l, selector(c.Name))
	return l
}

// peerServiceFor is the headless Service that gives every member pod the DNS
// name its peers reach it by, <pod>.<cluster>.<namespace>.svc. It publishes
// members before they are ready: a member only becomes ready once its peers
// have found it.
func peerServiceFor(c *etcdv1.EtcdCluster, owner *metav1ac.OwnerReferenceApplyConfiguration) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(c.Name, c.Namespace).
		WithLabels(childLabels(c)).
		WithOwnerReferences(owner).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(selector(c.Name)).
			WithPorts(
				servicePort("client", clientPort),
				servicePort("peer", peerPort)))
}

// clientServiceFor is the Service clients use, <cluster>-client:2379 as in
// coreos; it sends traffic to ready members only.
func clientServiceFor(c *etcdv1.EtcdCluster, owner *metav1ac.OwnerReferenceApplyConfiguration) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(clientServiceName(c.Name), c.Namespace).
		WithLabels(childLabels(c)).
		WithOwnerReferences(owner).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(selector(c.Name)).
			WithPorts(servicePort("client", clientPort)))
}

// disruptionBudgetFor keeps a quorum of c's members through voluntary
// disruptions (a node drain evicts a member only while enough others are
// ready). The operator's own restarts of members delete pods and are not
// held by it.
func disruptionBudgetFor(c *etcdv1.EtcdCluster, owner *metav1ac.OwnerReferenceApplyConfiguration) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return policyv1ac.PodDisruptionBudget(c.Name, c.Namespace).
		WithLabels(childLabels(c)).
		WithOwnerReferences(owner).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMinAvailable(intstr.FromInt(membership.Quorum(c.Spec.Size))).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector(c.Name))))
}

func servicePort(name string, port int32) *corev1ac.ServicePortApplyConfiguration {
	return corev1ac.ServicePort().WithName(name).WithPort(port).
		WithTargetPort(intstr.FromInt32(port)).WithProtocol(corev1.ProtocolTCP)
}

// memberID formats an etcd member ID as etcdctl prints it.
func memberID(id uint64) string { return strconv.FormatUint(id, 16) }

// volumeFor is the data volume of member name. id is the member's etcd ID,
// 0 while etcd has not given one (the first members of a new cluster).
func volumeFor(c *etcdv1.EtcdCluster, name string, id uint64) *corev1.PersistentVolumeClaim {
	spec := corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: defaultVolumeSize},
		},
	}
	if p := c.Spec.Pod; p != nil && p.PersistentVolumeClaimSpec != nil {
		spec = *p.PersistentVolumeClaimSpec.DeepCopy()
	}
	l := childLabels(c)
	if id != 0 {
		l[memberIDLabel] = memberID(id)
	}
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      volumeName(name),
			Namespace: c.Namespace,
			Labels:    l,
		},
		Spec: spec,
	}
}

// start says how a member's etcd joins: with the first members of a new
// cluster, or into a cluster that runs. etcd reads it only when its data
// directory is empty; a member that restarts on its volume ignores it.
type start struct {
	// initialCluster is --initial-cluster: every member as name=peerURL.
	initialCluster string
	// existing is --initial-cluster-state=existing; new otherwise.
	existing bool
}

// DefaultRequests are what a member requests of its node when neither the
// cluster's spec.pod.resources nor the operator's flags
// (--member-cpu-request, --member-memory-request) say otherwise.
var DefaultRequests = pods.NewRequests("100m", "128Mi")

// podFor is the pod of member name. It runs etcd on the member's volume,
// under the host name its peer URL names, and requests requests of its
// node unless the cluster's pod policy names its own resources.
func podFor(c *etcdv1.EtcdCluster, name string, how start, requests pods.Requests) *corev1.Pod {
	addr := HeadlessService(c)
	state := "new"
	if how.existing {
		state = "existing"
	}
	args := []string{
		"--name=" + name,
		"--data-dir=" + dataDir,
		fmt.Sprintf("--listen-peer-urls=http://0.0.0.0:%d", peerPort),
		fmt.Sprintf("--listen-client-urls=http://0.0.0.0:%d", clientPort),
		"--initial-advertise-peer-urls=" + addr.PeerURL(name),
		"--advertise-client-urls=" + addr.ClientURL(name),
		"--initial-cluster=" + how.initialCluster,
		"--initial-cluster-state=" + state,
		// The cluster's UID keeps members of two clusters that happen to
		// share a peer URL (a deleted and recreated cluster) apart.
		"--initial-cluster-token=" + string(c.UID),
	}
	container := corev1.Container{
		Name:    "etcd",
		Image:   Image(c),
		Command: []string{"/usr/local/bin/etcd"},
		Args:    args,
		// etcdctl in the pod speaks the v3 API, as the workshop's
		// `export ETCDCTL_API=3` wanted (etcd before 3.4 defaults to v2).
		Env: []corev1.EnvVar{{Name: "ETCDCTL_API", Value: "3"}},
		Ports: []corev1.ContainerPort{
			{Name: "client", ContainerPort: clientPort, Protocol: corev1.ProtocolTCP},
			{Name: "peer", ContainerPort: peerPort, Protocol: corev1.ProtocolTCP},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: dataMount}},
		// /health answers 200 when the member sees a leader: the client
		// Service then only sends traffic to members that can serve it.
		ReadinessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/health", Port: intstr.FromInt32(clientPort),
			}},
			PeriodSeconds:  5,
			TimeoutSeconds: 3,
		},
		SecurityContext: podsecurity.Container(),
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: c.Namespace,
			Labels:    map[string]string{},
		},
		Spec: corev1.PodSpec{
			// <pod>.<headless service> is the DNS name in the peer URL.
			Hostname:   name,
			Subdomain:  c.Name,
			Containers: []corev1.Container{container},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: volumeName(name)},
			}}},
			SecurityContext:               podsecurity.Pod(ptr.To[int64](memberUID)),
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			// A member never talks to the API server: no token to steal.
			AutomountServiceAccountToken: ptr.To(false),
		},
	}
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: requests.List()}
	if p := c.Spec.Pod; p != nil {
		maps.Copy(pod.Labels, p.Labels)
		pod.Spec.NodeSelector = p.NodeSelector
		pod.Spec.Affinity = p.Affinity
		pod.Spec.Tolerations = p.Tolerations
		if len(p.Resources.Requests) > 0 || len(p.Resources.Limits) > 0 || len(p.Resources.Claims) > 0 {
			pod.Spec.Containers[0].Resources = p.Resources
		}
	}
	// The operator's labels last: the pod policy cannot take a member out
	// of its Services.
	maps.Copy(pod.Labels, childLabels(c))
	return pod
}
