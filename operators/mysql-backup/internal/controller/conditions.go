package controller

// Condition types of a MySQL beyond the shared Ready, Progressing, Degraded.
const (
	// Restored says what the restore Job did when the MySQL was created.
	Restored = "Restored"
	// BackupSucceeded says how the backup before delete went.
	BackupSucceeded = "BackupSucceeded"
	// PasswordChanged says how the last password change went.
	PasswordChanged = "PasswordChanged"
)

// Reasons.
const (
	ReasonSecretNotFound   = "SecretNotFound"
	ReasonSecretKeyMissing = "SecretKeyMissing"
	ReasonServerStarting   = "ServerStarting"
	ReasonRestoring        = "Restoring"
	ReasonRestored         = "Restored"
	ReasonNoBackup         = "NoBackup"
	ReasonRestoreFailed    = "RestoreFailed"
	ReasonPreviousJob      = "WaitingForPreviousJob"
	ReasonBackingUp        = "BackingUp"
	ReasonBackupDone       = "BackupSucceeded"
	ReasonBackupFailed     = "BackupFailed"
	ReasonBackupSkipped    = "BackupSkipped"
	ReasonChangingPassword = "ChangingPassword"
	ReasonPasswordChanged  = "PasswordChanged"
	ReasonPasswordFailed   = "PasswordChangeFailed"
	ReasonReady            = "Ready"
)
