package controller

import (
	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/secrets"
)

// Condition types of a MySQL beyond the shared Ready, Progressing, Degraded.
const (
	// Restored says what the restore Job did when the MySQL was created.
	Restored = "Restored"
	// BackupSucceeded says how the backup before delete went.
	BackupSucceeded = "BackupSucceeded"
	// PasswordChanged says how the last password change went.
	PasswordChanged = "PasswordChanged"
	// BackupSpace says whether the backup volume has room for the next
	// dump, as last measured.
	BackupSpace = "BackupSpace"
)

// Reasons.
const (
	ReasonSecretNotFound   = secrets.ReasonSecretNotFound
	ReasonSecretKeyMissing = secrets.ReasonSecretKeyMissing
	ReasonNameConflict     = conditions.ReasonNameConflict
	ReasonServerStarting   = "ServerStarting"
	ReasonRestoring        = "Restoring"
	ReasonRestored         = "Restored"
	ReasonNoBackup         = "NoBackup"
	// ReasonNoLatest: no backup is marked latest, but dumps kept aside are
	// on the backup volume.
	ReasonNoLatest = "NoLatestBackup"
	// ReasonDataVolumeReplaced: the data volume is not the one restored.
	ReasonDataVolumeReplaced = "DataVolumeReplaced"
	ReasonDataVolumeDeleted  = "DataVolumeDeleted"
	// ReasonServerPodDeleted, an event: the server's pod was deleted to
	// let its data volume, deleted before any restore finished on it, go.
	ReasonServerPodDeleted = "ServerPodDeleted"
	// ReasonDataVolumeRefused: the API server refused a change of the data
	// volume's spec.
	ReasonDataVolumeRefused   = "DataVolumeChangeRefused"
	ReasonBackupVolumeDeleted = "BackupVolumeDeleted"
	// ReasonServerNotReady: the server's pod runs and has not been ready
	// for serverReadyLimit.
	ReasonServerNotReady = "ServerNotReady"
	// ReasonBackupVolumeLost: the backup volume a backup was written to
	// was deleted or replaced, or lost its storage, before the backup
	// counted.
	ReasonBackupVolumeLost = "BackupVolumeLost"
	// ReasonNothingToBackUp: the server never started, so its deletion
	// needs no backup.
	ReasonNothingToBackUp = "NothingToBackUp"
	ReasonRestoreFailed   = "RestoreFailed"
	// ReasonRestoreUnreported: the restore Job succeeded without saying what
	// it loaded.
	ReasonRestoreUnreported = "RestoreUnreported"
	ReasonPreviousJob       = "WaitingForPreviousJob"
	ReasonPreviousObject    = "WaitingForPreviousMySQL"
	ReasonReplacing         = "ReplacingDeployment"
	ReasonBackingUp         = "BackingUp"
	ReasonBackupDone        = "BackupSucceeded"
	ReasonBackupAside       = "BackupKeptAside"
	ReasonBackupFailed      = "BackupFailed"
	// ReasonVerifying: the verify Job checks that the dump is on the
	// backup volume as the backup reported; ReasonNotVerified: it did not
	// find it so.
	ReasonVerifying   = "VerifyingBackup"
	ReasonNotVerified = "BackupNotVerified"
	// ReasonBackupUnreported: the backup Job succeeded without saying what
	// it wrote.
	ReasonBackupUnreported = "BackupUnreported"
	ReasonBackupSkipped    = "BackupSkipped"
	ReasonDeleting         = "Deleting"
	ReasonChangingPassword = "ChangingPassword"
	ReasonPasswordChanged  = "PasswordChanged"
	ReasonPasswordFailed   = "PasswordChangeFailed"
	ReasonSpaceOK          = "SpaceAvailable"
	ReasonSpaceLow         = "BackupVolumeLow"
	ReasonSpaceUnknown     = "SpaceNotMeasured"
	ReasonReady            = "Ready"
)
