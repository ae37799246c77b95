package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultImage is the workshop's gordon image.
const DefaultImage = "prgcont/gordon:v1.0"

// GordonSpec is what the user asks for, shaped as in the workshop:
// spec.gordon.replicas.
type GordonSpec struct {
	// gordon holds the settings of the gordon pods.
	// +required
	Gordon GordonSettings `json:"gordon"`
}

// GordonSettings are the settings of the gordon pods.
type GordonSettings struct {
	// replicas is how many gordon pods to keep running: 0 or more.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Replicas int32 `json:"replicas"`

	// image of the gordon container; default prgcont/gordon:v1.0. A change
	// applies to pods created afterwards.
	// +optional
	// +kubebuilder:default="prgcont/gordon:v1.0"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// runAsUser runs the gordon container as this user, not as root, so
	// that its pods meet the "restricted" Pod Security level (a namespace
	// that enforces it refuses pods that may run as root, and the
	// workshop's image does not say which user it runs as). Any user will
	// do for the workshop's image. A change applies to pods created
	// afterwards.
	// +optional
	// +kubebuilder:validation:Minimum=1
	RunAsUser *int64 `json:"runAsUser,omitempty"`
}

// GordonStatus is what the operator observed. It replaces the workshop's
// top-level `state` field, which a structural schema prunes.
type GordonStatus struct {
	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// replicas is the number of pods that belong to this Gordon and are not
	// terminating.
	// +optional
	Replicas int32 `json:"replicas"`

	// readyReplicas is the number of those pods that are ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`

	// pods lists the names of the pods that belong to this Gordon, sorted.
	// +optional
	// +listType=set
	Pods []string `json:"pods,omitempty"`

	// selector is the label selector of the pods, for `kubectl scale` and
	// `kubectl get pods -l`.
	// +optional
	Selector string `json:"selector,omitempty"`

	// conditions: Ready is true when exactly spec.gordon.replicas pods exist
	// and all are ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Gordon keeps spec.gordon.replicas identical pods running, lists them in its
// status and replaces those that end.
//
// Its name is the value of its pods' instance label, by which it selects
// them: at most 63 characters.
//
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="metadata.name may have at most 63 characters: it is the value of the pods' app.kubernetes.io/instance label, and a label value has at most 63"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.gordon.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=gn,categories=workshop
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.gordon.replicas`
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Gordon struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec GordonSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status GordonStatus `json:"status,omitempty"`
}

// StatusConditions points at the status conditions, for the shared
// reconcile shape (operators/common/reconciler).
func (g *Gordon) StatusConditions() *[]metav1.Condition { return &g.Status.Conditions }

// SetObservedGeneration records the generation the status describes.
func (g *Gordon) SetObservedGeneration(gen int64) { g.Status.ObservedGeneration = gen }

// GetObservedGeneration is status.observedGeneration, the last generation
// carried out.
func (g *Gordon) GetObservedGeneration() int64 { return g.Status.ObservedGeneration }

// GordonList is a list of Gordons.
//
// +kubebuilder:object:root=true
type GordonList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gordon `json:"items"`
}
