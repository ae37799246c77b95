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
	// mysqlLabel names the MySQL a child belongs to: the operator finds the
	// MySQL of a Job, a server pod or any other child by it.
	mysqlLabel = "otus.homework/mysql"
	// servingLabel on the server's pods says its restore is done: the
	// Service selects only such pods, so no client reaches a server whose
	// tables a restore is still replacing.
	servingLabel = "otus.homework/serving"
	// homeworkAppLabel is the label the homework selects the server's pod
	// with: kubectl get pods -l app=N.
	homeworkAppLabel = "app"
	// uidAnnotation on every object the operator creates for a MySQL is that
	// MySQL's UID. The server, its volume, its Service and its credentials
	// carry no owner reference (the garbage collector would delete them
	// before the backup, in a foreground deletion): this annotation is how
	// the operator tells its own objects from a stranger's, and from those of
	// an earlier MySQL of the same name.
	uidAnnotation = "otus.homework/mysql-uid"
	// restoredAnnotation on the data volume says what its restore loaded
	// into it: a dump's name, restoredNone or restoredUnknown. The operator
	// writes it once the volume's restore Job succeeded; it, not the
	// MySQL's status (which anyone who may write the status can change),
	// says that the volume needs no restore and which backup its data
	// comes from. A new volume, one that replaced a deleted one, has none:
	// it is restored again.
	restoredAnnotation = "otus.homework/restored-from"
	// spaceAnnotation on the data volume is what its restore Job measured
	// of the backup volume, "FREE/DUMP" in bytes (-1 when not measured):
	// every pass says BackupSpace from it, rather than from the status.
	spaceAnnotation = "otus.homework/backup-space"
	restoredNone    = "none"
	restoredUnknown = "unknown"
	// startedAnnotation "true" on the data volume says a server's
	// container started on it: from then on it may hold rows, and the
	// MySQL's deletion backs it up, whatever its pods look like then.
	startedAnnotation = "otus.homework/server-started"
	// dataVolumeAnnotation on a restore Job is the UID of the data volume
	// it restores into, and serverPodAnnotation, on a restore, backup or
	// password Job, the UID of the server pod it loads into, dumps from or
	// changes the password of.
	dataVolumeAnnotation = "otus.homework/data-volume-uid"
	serverPodAnnotation  = "otus.homework/server-pod-uid"
	// backupVolumeAnnotation on a backup Job and on a verify Job is the
	// UID of the backup volume the Job was made for: the backup counts
	// only while that volume is still the one of its name, bound and not
	// being deleted (checkBackup).
	backupVolumeAnnotation = "otus.homework/backup-volume-uid"
	// backupJobAnnotation on a verify Job is the UID of the backup Job
	// whose report it checks.
	backupJobAnnotation = "otus.homework/backup-job-uid"
	// backupOfAnnotation on the backup volume names the MySQL it was made
	// for: only a volume the operator made for the backups of that name is
	// ever written to. (The name alone says nothing: the data volume of a
	// MySQL named backup-n is backup-n-pvc, as is n's backup volume.)
	backupOfAnnotation = "otus.homework/backup-of"
	// passwordVersionAnnotation counts the password changes on the
	// credentials Secret and, on the server's pod template, rolls the pod
	// when it moves, so that its MYSQL_ROOT_PASSWORD is the current one. It
	// says nothing about the password itself.
	passwordVersionAnnotation = "otus.homework/password-version"
	// templateAnnotation on the server's Deployment is the hash of the pod
	// template it was last given, once the API server was asked whether it
	// admits a pod of it (Recreate deletes the running pod before it
	// creates the new one).
	templateAnnotation = "otus.homework/pod-template"
	// credentialsVersionAnnotation on a password Job is the resourceVersion
	// of the credentials Secret it was started from: the Job's pod read the
	// passwords of that version, and only then may its success be recorded.
	credentialsVersionAnnotation = "otus.homework/credentials-version"
	// targetAnnotation on a password Job is the key of the credentials
	// Secret whose password the Job sets.
	targetAnnotation = "otus.homework/password-target"
	// Keys of the credentials Secret: the password the server was last
	// known to have, and the one a password Job may have set. The server
	// always has one of the two.
	keyPassword        = "password"
	keyPendingPassword = "pending-password"
	mysqlPort          = 3306
	// mysqlUID is the unprivileged user of the official mysql images.
	mysqlUID = 999
	// jobWaitSeconds is how long a Job waits for the server to answer: a new
	// server may take minutes to initialise its data directory.
	jobWaitSeconds = "300"
)

// Components: the app.kubernetes.io/component of the server and of each Job.
// A Service selects the server's component only.
const (
	componentServer   = "server"
	componentRestore  = "restore"
	componentBackup   = "backup"
	componentPassword = "password"
	componentVerify   = "verify"
)

// Names of the children of MySQL n.
func dataPVCName(n string) string     { return n + "-pvc" }
func backupPVCName(n string) string   { return "backup-" + n + "-pvc" }
func credentialsName(n string) string { return n + "-credentials" }
func restoreJobName(n string) string  { return "restore-" + n + "-job" }
func backupJobName(n string) string   { return "backup-" + n + "-job" }
func passwordJobName(n string) string { return "password-" + n + "-job" }
func verifyJobName(n string) string   { return "verify-" + n + "-job" }
