package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SkipBackupAnnotation, set to "true" on a MySQL being deleted, lets the
// deletion go on without a backup: for an administrator who decided the data
// may be lost, or whose server cannot be backed up any more.
const SkipBackupAnnotation = "otus.homework/skip-backup"

// BackupAsLatestAnnotation, set to "true" on a MySQL, makes the backup taken
// before its deletion the latest one, which the next MySQL of the same name
// restores, whatever latest names then. Without it that backup becomes the
// latest only if latest still names the backup the server was restored
// from (none, if it restored none): otherwise it is kept aside under its own
// name, so that a server that never got its data back, or a stale one,
// never hides a newer backup.
const BackupAsLatestAnnotation = "otus.homework/backup-as-latest"

// RestoreFromAnnotation, set on a MySQL when it is created, names the dump
// of its backup volume that its restore loads instead of the latest one: a
// dump kept aside, which the MySQL's Restored condition names. The backup
// before its deletion then becomes the latest one.
const RestoreFromAnnotation = "otus.homework/restore-from"

// DefaultBackupsToKeep is spec.backupsToKeep when the MySQL does not say.
const DefaultBackupsToKeep = 5

// MySQLSpec is the homework's cr.yml, plus a safer way to give the password.
//
// +kubebuilder:validation:XValidation:rule="has(self.password) != has(self.passwordSecretRef)",message="give exactly one of password and passwordSecretRef (recommended: a Secret, so the password is not in the manifest)"
// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",message="storageClassName cannot change: a volume's class is fixed when it is created (to move the data, delete the MySQL and create it again with the new class: it is backed up, then restored)"
type MySQLSpec struct {
	// image of the MySQL server, for example mysql:5.7 or mysql:8.0. The
	// backup, restore and password Jobs run it too, for its client tools.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// database to create and to back up: letters, digits, $, _ and -, not
	// starting with - (the dump tools would read it as an option), and
	// none of the databases MySQL keeps for itself. It cannot change: the
	// server and its backups hold the database under this name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9A-Za-z$_][0-9A-Za-z$_-]*$')",message="database may hold letters, digits, $, _ and -, and must not start with - (the dump tools would read it as an option)"
	// +kubebuilder:validation:XValidation:rule="!(self.lowerAscii() in ['information_schema', 'mysql', 'performance_schema', 'sys'])",message="database must not be one of MySQL's own (information_schema, mysql, performance_schema, sys)"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="database cannot change: the server and its backups hold the database under its first name (create a new MySQL for another database)"
	Database string `json:"database"`

	// password of the root user, in clear text as in the homework. Prefer
	// passwordSecretRef. Changing it changes the password in the running
	// server. It must not start with -: the image's entrypoint would read it
	// as an option.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('-')",message="password must not start with - (the MySQL image's entrypoint would read it as an option)"
	Password string `json:"password,omitempty"`

	// passwordSecretRef names the Secret key with the root password, in the
	// MySQL's namespace. Changing the Secret changes the password in the
	// running server.
	// +optional
	PasswordSecretRef *SecretKeyRef `json:"passwordSecretRef,omitempty"`

	// storage_size is the size of the data volume, and of the backup volume
	// when it is created: a whole number of bytes. It may grow (the data
	// volume follows when its StorageClass allows expansion), never shrink.
	// +required
	// +kubebuilder:validation:XValidation:rule="!quantity(string(self)).isLessThan(quantity(string(oldSelf)))",message="storage_size cannot shrink: no volume does (to move the data to a smaller one, delete the MySQL and create it again: it is backed up, then restored)"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="storage_size must be a positive size, such as 1Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isInteger()",message="storage_size must be a whole number of bytes, such as 1Gi (m means thousandths)"
	StorageSize resource.Quantity `json:"storage_size"`

	// storageClassName of both volumes; default: the cluster's default
	// class. It cannot change once the MySQL exists.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`

	// backupsToKeep is how many dumps the backup volume keeps; each backup
	// removes the oldest beyond it, never the latest. Default 5.
	// +optional
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	BackupsToKeep int32 `json:"backupsToKeep,omitempty"`
}

// SecretKeyRef names a key of a Secret in the MySQL's namespace.
type SecretKeyRef struct {
	// name of the Secret, in the MySQL's namespace (a name, not
	// namespace/name).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="name must be a Secret's name in the MySQL's namespace (lower-case letters, digits, - and .), not namespace/name"
	Name string `json:"name"`

	// key in the Secret's data; default "password".
	// +optional
	// +kubebuilder:default=password
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// SecretName is the name of the Secret ref names, "" for no ref.
func (ref *SecretKeyRef) SecretName() string {
	if ref == nil {
		return ""
	}
	return ref.Name
}

// MySQLStatus is what the operator observed and did.
type MySQLStatus struct {
	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (the restore is done and the server answers
	// clients), Progressing, Degraded (a person must act: the message says
	// how), Restored (what the restore Job did), BackupSucceeded (the backup
	// before delete), PasswordChanged and BackupSpace (whether the backup
	// volume has room for the next dump).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// message says what happened, as the homework's operator did:
	// "mysql-instance created with restore-job" or "... without restore-job".
	// +optional
	Message string `json:"message,omitempty"`

	// lastBackupTime is when the last backup of this MySQL completed.
	// +optional
	LastBackupTime *metav1.Time `json:"lastBackupTime,omitempty"`

	// lastBackup is where that backup is: backup-<name>-pvc/<file>.
	// +optional
	LastBackup string `json:"lastBackup,omitempty"`

	// restoredFrom is the backup the server was restored from when it was
	// created; empty when there was none.
	// +optional
	RestoredFrom string `json:"restoredFrom,omitempty"`
}

// MySQL is a MySQL server with its data and backup volumes.
//
// Its name becomes the name of its Service and, inside longer names, of its
// Jobs (password-<name>-job, at most 63 characters): a DNS label of at most
// 50 characters.
//
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 50",message="metadata.name may have at most 50 characters: the MySQL's Jobs are named password-<name>-job, and a Job's name has at most 63"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS label (lower-case letters, digits and -, starting with a letter): it names the MySQL's Service"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ms,categories=workshop
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Database",type=string,JSONPath=`.spec.database`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Last backup",type=date,JSONPath=`.status.lastBackupTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MySQL struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired server.
	// +required
	Spec MySQLSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status MySQLStatus `json:"status,omitempty"`
}

// StatusConditions points at the status conditions, for the shared
// reconcile shape (operators/common/reconciler).
func (m *MySQL) StatusConditions() *[]metav1.Condition { return &m.Status.Conditions }

// SetObservedGeneration records the generation the status describes.
func (m *MySQL) SetObservedGeneration(g int64) { m.Status.ObservedGeneration = g }

// GetObservedGeneration is status.observedGeneration, the last generation
// carried out.
func (m *MySQL) GetObservedGeneration() int64 { return m.Status.ObservedGeneration }

// MySQLList is a list of MySQLs.
//
// +kubebuilder:object:root=true
type MySQLList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MySQL `json:"items"`
}
