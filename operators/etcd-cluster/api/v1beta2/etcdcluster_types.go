package v1beta2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ScopeAnnotation, set to ScopeClusterWide, marks an EtcdCluster for an
// operator running with --cluster-wide, as the coreos operator did. Operators
// in namespaced mode ignore such clusters, cluster-wide ones act only on them.
const (
	ScopeAnnotation  = "etcd.database.coreos.com/scope"
	ScopeClusterWide = "clusterwide"
)

// Defaults of the coreos operator.
const (
	DefaultRepository = "quay.io/coreos/etcd"
	DefaultVersion    = "3.2.13"
)

// ClusterSpec is the coreos etcd-operator's spec, where it still makes sense.
type ClusterSpec struct {
	// size is the number of members: 1 or more. Odd sizes tolerate as many
	// failures as the even size above them (3 and 4 both tolerate one), so
	// the operator warns on even sizes.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	Size int `json:"size"`

	// repository of the etcd image; the image is repository:v<version>.
	// +optional
	// +kubebuilder:default="quay.io/coreos/etcd"
	// +kubebuilder:validation:MinLength=1
	Repository string `json:"repository,omitempty"`

	// version of etcd, for example "3.2.13" or "3.6.16". A change rolls the
	// members one at a time.
	// +optional
	// +kubebuilder:default="3.2.13"
	// +kubebuilder:validation:Pattern=`^v?[0-9]+\.[0-9]+\.[0-9]+.*$`
	Version string `json:"version,omitempty"`

	// paused stops every change to the cluster, until it is false again.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// pod is the policy of the member pods.
	// +optional
	Pod *PodPolicy `json:"pod,omitempty"`
}

// PodPolicy is the subset of the coreos pod policy the operator honours.
type PodPolicy struct {
	// labels added to the member pods; they cannot override the operator's
	// own (app, etcd_cluster).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// nodeSelector of the member pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// affinity of the member pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// tolerations of the member pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// resources of the etcd container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// persistentVolumeClaimSpec of each member's data volume; default: 1Gi
	// of the cluster's default storage class. The coreos operator kept data
	// in emptyDir and lost it all when every pod died; here it is not
	// optional.
	// +optional
	PersistentVolumeClaimSpec *corev1.PersistentVolumeClaimSpec `json:"persistentVolumeClaimSpec,omitempty"`
}

// ClusterPhase is the coreos phase of a cluster.
// +kubebuilder:validation:Enum=Creating;Running;Failed
type ClusterPhase string

// The phases.
const (
	PhaseCreating ClusterPhase = "Creating"
	PhaseRunning  ClusterPhase = "Running"
	PhaseFailed   ClusterPhase = "Failed"
)

// MembersStatus lists the members by readiness, as coreos did.
type MembersStatus struct {
	// ready members answer their health check.
	// +optional
	// +listType=set
	Ready []string `json:"ready,omitempty"`
	// unready members do not, or are still starting.
	// +optional
	// +listType=set
	Unready []string `json:"unready,omitempty"`
}

// ClusterStatus is the coreos status plus standard conditions.
type ClusterStatus struct {
	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is Creating, Running or Failed.
	// +optional
	Phase ClusterPhase `json:"phase,omitempty"`

	// reason says why the cluster is in its phase.
	// +optional
	Reason string `json:"reason,omitempty"`

	// controlPaused is true while spec.paused holds every change.
	// +optional
	ControlPaused bool `json:"controlPaused,omitempty"`

	// size is the number of members.
	// +optional
	Size int `json:"size,omitempty"`

	// members lists the members by readiness.
	// +optional
	Members MembersStatus `json:"members,omitempty"`

	// serviceName is the client Service: <name>-client.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// clientPort is the client port of the Service, 2379.
	// +optional
	ClientPort int `json:"clientPort,omitempty"`

	// currentVersion is the etcd version every member runs.
	// +optional
	CurrentVersion string `json:"currentVersion,omitempty"`

	// targetVersion is the version members are being moved to, if any.
	// +optional
	TargetVersion string `json:"targetVersion,omitempty"`

	// conditions: Ready (spec.size members, all healthy, on spec.version),
	// Available (a quorum of members is healthy: the cluster serves),
	// Progressing (a membership or version change is under way) and Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdCluster is an etcd cluster of spec.size members.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=etcd;etcdclus
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdCluster struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired cluster.
	// +required
	Spec ClusterSpec `json:"spec"`

	// status is the observed cluster.
	// +optional
	Status ClusterStatus `json:"status,omitempty"`
}

// EtcdClusterList is a list of EtcdClusters.
//
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}
