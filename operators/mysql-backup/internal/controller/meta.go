package controller

// Names of what the operator creates and writes, in one place. For a MySQL
// named N the children have the homework's names.
const (
	// FieldOwner is the server-side apply field manager and the source of
	// the events the operator records.
	FieldOwner = "mysql-backup-operator"
	// appName is the app.kubernetes.io/name of every child.
	appName = "mysql"
	// finalizer holds a MySQL being deleted until its backup succeeded.
	finalizer = "otus.homework/backup"
	// mysqlLabel names the MySQL a child belongs to, also on the backup PVC
	// and the backup Job, which it does not own.
	mysqlLabel = "otus.homework/mysql"
	// homeworkAppLabel is the label the homework selects the server's pod
	// with: kubectl get pods -l app=N.
	homeworkAppLabel = "app"
	// uidAnnotation on a backup Job is the UID of the MySQL it backed up:
	// a job of an earlier MySQL of the same name is not this deletion's.
	uidAnnotation = "otus.homework/mysql-uid"
	// passwordHashAnnotation on the password Job is a hash of the password it
	// sets, and on the server's pod template a hash of the current one, so
	// that a change rolls the pod.
	passwordHashAnnotation = "otus.homework/password-hash"
	// Keys of the credentials Secret: the password the server has, and the
	// one a password Job is setting.
	keyPassword        = "password"
	keyPendingPassword = "pending-password"
	mysqlPort          = 3306
	// mysqlUID is the unprivileged user of the official mysql images.
	mysqlUID = 999
)

// Names of the children of MySQL n.
func dataPVCName(n string) string     { return n + "-pvc" }
func backupPVCName(n string) string   { return "backup-" + n + "-pvc" }
func credentialsName(n string) string { return n + "-credentials" }
func restoreJobName(n string) string  { return "restore-" + n + "-job" }
func backupJobName(n string) string   { return "backup-" + n + "-job" }
func passwordJobName(n string) string { return "password-" + n + "-job" }
