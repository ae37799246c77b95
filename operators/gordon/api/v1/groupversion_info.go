// Package v1 is the operator.prgcont.cz/v1 API of the gordon operator: the
// Gordon resource of the prgcont workshop (seed 004), which keeps a number of
// identical pods running.
//
// +kubebuilder:object:generate=true
// +groupName=operator.prgcont.cz
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "operator.prgcont.cz", Version: "v1"}

var schemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Gordon{}, &GordonList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
})

// AddToScheme adds this API's types to a scheme. The package depends on
// apimachinery only, so that clients can import it cheaply.
var AddToScheme = schemeBuilder.AddToScheme
