/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// EDIT THIS FILE!  THIS IS SCAFFOLDING FOR YOU TO OWN!
// NOTE: json tags are required.  Any new fields you add must have json tags for the fields to be serialized.

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
	Replicas int32 `json:"replicas"`
}

// GordonStatus is what the operator observed: the workshop kept it in a
// top-level "state" field, which a structural schema prunes.
type GordonStatus struct {
	// replicas is the number of the Gordon's pods that still run.
	// +optional
	Replicas int32 `json:"replicas"`

	// pods lists their names, sorted.
	// +optional
	// +listType=set
	Pods []string `json:"pods,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gn
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.gordon.replicas`
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.replicas`

// Gordon keeps spec.gordon.replicas gordon pods running, and lists them in
// its status.
type Gordon struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is a standard object metadata
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec defines the desired state of Gordon
	// +required
	Spec GordonSpec `json:"spec"`

	// status defines the observed state of Gordon
	// +optional
	Status GordonStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// GordonList contains a list of Gordon
type GordonList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []Gordon `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(SchemeGroupVersion, &Gordon{}, &GordonList{})
		return nil
	})
}
