// Package v1 is the zalando.org/v1 API of the Database operator: the
// Database resource of the kopf workshop (seed 000), which becomes a Pod and
// a NodePort Service.
//
// +kubebuilder:object:generate=true
// +groupName=zalando.org
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "zalando.org", Version: "v1"}

	// SchemeBuilder registers this API's types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
