package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Type is the database engine a Database runs.
// +kubebuilder:validation:Enum=mongo;mysql
type Type string

// The engines of the workshop.
const (
	Mongo Type = "mongo"
	MySQL Type = "mysql"
)

// DatabaseSpec is what the user asks for.
// +kubebuilder:validation:XValidation:rule="!has(self.rootPasswordSecretRef) || self.type == 'mysql'",message="rootPasswordSecretRef is only for type mysql"
type DatabaseSpec struct {
	// type is the database engine: mongo (image mongo:4.0, port 27017) or
	// mysql (image mysql:8.0, port 3306). It cannot change: delete the
	// Database and create it again to switch engines.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable: delete the Database and create it again with the other type"
	Type Type `json:"type"`

	// image overrides the engine's default image, for example a mirror or a
	// newer tag. Changing it replaces the Pod.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// rootPasswordSecretRef names the Secret key holding the mysql root
	// password. When it is not set, the operator generates a random password
	// in a Secret named <name>-root-password, owned by the Database.
	// +optional
	RootPasswordSecretRef *SecretKeyRef `json:"rootPasswordSecretRef,omitempty"`
}

// SecretKeyRef names a key of a Secret in the Database's namespace.
type SecretKeyRef struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key in the Secret's data; default "password".
	// +optional
	// +kubebuilder:default=password
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key,omitempty"`
}

// SecretName is the name of the Secret ref names, "" for no ref.
func (ref *SecretKeyRef) SecretName() string {
	if ref == nil {
		return ""
	}
	return ref.Name
}

// DatabaseStatus is what the operator observed.
type DatabaseStatus struct {
	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready is true when the Pod runs and is ready and the
	// Service has its NodePort; `kubectl wait --for=condition=Ready` uses it.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// message says what the operator did, as the workshop's operator did:
	// "Pod and Service created by Database <name>".
	// +optional
	Message string `json:"message,omitempty"`

	// nodePort is the port of every node on which the database answers.
	// +optional
	NodePort int32 `json:"nodePort,omitempty"`

	// rootPasswordSecret is the name of the Secret that holds the mysql root
	// password (never the password itself).
	// +optional
	RootPasswordSecret string `json:"rootPasswordSecret,omitempty"`
}

// Database is a mongo or mysql database run as one Pod, exposed by a NodePort
// Service of the same name.
//
// Its name is the name of its Service and the value of its children's
// instance label: a DNS label of at most 63 characters.
//
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="metadata.name may have at most 63 characters: it names the Database's Service and labels its Pod"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS label (lower-case letters, digits and -, starting with a letter): it names the Database's Service"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=db;dbs,categories=workshop
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`,description="The type of the database"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Port",type=integer,JSONPath=`.status.nodePort`,description="NodePort of the database"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Database struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired database.
	// +required
	Spec DatabaseSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status DatabaseStatus `json:"status,omitempty"`
}

// StatusConditions points at the status conditions, for the shared
// reconcile shape (operators/common/reconciler).
func (db *Database) StatusConditions() *[]metav1.Condition { return &db.Status.Conditions }

// SetObservedGeneration records the generation the status describes.
func (db *Database) SetObservedGeneration(g int64) { db.Status.ObservedGeneration = g }

// GetObservedGeneration is status.observedGeneration, the last generation
// carried out.
func (db *Database) GetObservedGeneration() int64 { return db.Status.ObservedGeneration }

// DatabaseList is a list of Databases.
//
// +kubebuilder:object:root=true
type DatabaseList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Database `json:"items"`
}
