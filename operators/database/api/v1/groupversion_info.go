// Package v1 is the zalando.org/v1 API of the Database operator: the
// Database resource of the kopf workshop (seed 000), which becomes a Pod and
// a NodePort Service.
//
// +kubebuilder:object:generate=true
// +groupName=zalando.org
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "zalando.org", Version: "v1"}

var schemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Database{}, &DatabaseList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
})

// AddToScheme adds this API's types to a scheme. The package depends on
// apimachinery only, so that clients can import it cheaply.
var AddToScheme = schemeBuilder.AddToScheme
