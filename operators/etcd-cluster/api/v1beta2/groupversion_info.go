// Package v1beta2 is the etcd.database.coreos.com/v1beta2 API of the
// etcd-cluster operator: the EtcdCluster of the coreos etcd-operator, which
// the workshops (seeds 001 and 004) deploy, so that their manifests work as
// written.
//
// +kubebuilder:object:generate=true
// +groupName=etcd.database.coreos.com
package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "etcd.database.coreos.com", Version: "v1beta2"}

var schemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &EtcdCluster{}, &EtcdClusterList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
})

// AddToScheme adds this API's types to a scheme. The package depends on
// apimachinery only, so that clients can import it cheaply.
var AddToScheme = schemeBuilder.AddToScheme
