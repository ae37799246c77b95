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

	// repository of the etcd image; the image is repository:v<version>, so
	// the repository names no tag or digest of its own.
	// +optional
	// +kubebuilder:default="quay.io/coreos/etcd"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$')",message="repository must be an image name without a tag or digest, such as quay.io/coreos/etcd: the operator adds :v<version>"
	Repository string `json:"repository,omitempty"`

	// version of etcd, for example "3.2.13" or "3.6.16": MAJOR.MINOR.PATCH,
	// with or without a leading v. A change rolls the members one at a time;
	// etcd upgrades one minor version at a time and never downgrades, so a
	// change may keep the minor version, raise it by one, or lower it by one
	// to take back an upgrade that has not reached every member (the
	// operator moves no member down: it says so in Degraded, reason
	// VersionStep, as when two edits in a row would skip a minor version).
	// +optional
	// +kubebuilder:default="3.2.13"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^v?(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)[.](0|[1-9][0-9]*)$')",message="version must be MAJOR.MINOR.PATCH, such as 3.5.21 (a v in front is allowed; no pre-release or build suffix)"
	// +kubebuilder:validation:XValidation:rule="!oldSelf.matches('^v?[0-9]+[.][0-9]+[.]') || !self.matches('^v?[0-9]+[.][0-9]+[.]') || (self.replace('v', '').split('.')[0] == oldSelf.replace('v', '').split('.')[0] && int(self.replace('v', '').split('.')[1]) - int(oldSelf.replace('v', '').split('.')[1]) in [-1, 0, 1])",message="version may keep its minor version, raise it by one, or lower it by one to take an upgrade back; never skip one: etcd upgrades one minor version at a time (3.4.x to 3.5.y, then 3.6.z)"
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
	// labels added to the member pods; they cannot set the operator's own
	// (app, etcd_cluster, app.kubernetes.io/*, etcd.database.coreos.com/*),
	// which select and identify the members.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['app', 'etcd_cluster']) && !k.startsWith('app.kubernetes.io/') && !k.startsWith('etcd.database.coreos.com/'))",message="pod.labels cannot set app, etcd_cluster, app.kubernetes.io/* or etcd.database.coreos.com/*: the operator selects and identifies its members by them"
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
	// optional. It must ask for storage, and start empty: a member's data
	// is its own, so no dataSource or dataSourceRef.
	// +optional
	// +kubebuilder:validation:XValidation:rule="has(self.resources) && has(self.resources.requests) && 'storage' in self.resources.requests",message="persistentVolumeClaimSpec.resources.requests.storage is required: each member's volume needs a size"
	// +kubebuilder:validation:XValidation:rule="!has(self.dataSource) && !has(self.dataSourceRef)",message="persistentVolumeClaimSpec cannot have a dataSource or dataSourceRef: each member's volume starts empty, and etcd fills it with that member's own data"
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
// Its name names its Services (<name> and <name>-client) and, with an
// ordinal, its member pods, which are the members' host names
// (<name>-<ordinal>.<name>): a DNS label of at most 50 characters, leaving
// room for the ordinal.
//
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 50",message="metadata.name may have at most 50 characters: the member pods are named <name>-<ordinal>, and a pod's host name has at most 63"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS label (lower-case letters, digits and -, starting with a letter): it names the cluster's Services"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=etcd;etcdclus,categories=workshop
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

// StatusConditions points at the status conditions, for the shared
// reconcile shape (operators/common/reconciler).
func (c *EtcdCluster) StatusConditions() *[]metav1.Condition { return &c.Status.Conditions }

// SetObservedGeneration records the generation the status describes.
func (c *EtcdCluster) SetObservedGeneration(g int64) { c.Status.ObservedGeneration = g }

// GetObservedGeneration is status.observedGeneration, the last generation
// carried out.
func (c *EtcdCluster) GetObservedGeneration() int64 { return c.Status.ObservedGeneration }

// EtcdClusterList is a list of EtcdClusters.
//
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}
