// Package v1 is the otus.homework/v1 API of the mysql-backup operator: the
// MySQL resource of the OTUS homework (seed 002), which becomes a MySQL
// server with its storage, restored from the last backup when it is created
// and backed up before it is deleted.
//
// +kubebuilder:object:generate=true
// +groupName=otus.homework
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of this API.
var GroupVersion = schema.GroupVersion{Group: "otus.homework", Version: "v1"}

var schemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &MySQL{}, &MySQLList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
})

// AddToScheme adds this API's types to a scheme. The package depends on
// apimachinery only, so that clients can import it cheaply.
var AddToScheme = schemeBuilder.AddToScheme
