package scripts

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

// Backup is backup.sh: it dumps MYSQL_DATABASE to a new file in BACKUP_DIR
// and points BACKUP_DIR/latest at it, or fails leaving both untouched.
var Backup = withCommon(backupSource)

// Restore is restore.sh: it loads the dump BACKUP_DIR/latest names, or
// reports no-backup when there is none.
var Restore = withCommon(restoreSource)

// Password is password.sh: it changes the password of MYSQL_USER's '%' and
// 'localhost' accounts from MYSQL_PASSWORD to MYSQL_NEW_PASSWORD,
// idempotently.
var Password = withCommon(passwordSource)

// Verify is verify.sh: it checks that the dump backup.sh reported is in
// BACKUP_DIR, whole and of the size reported, and named by latest when
// asked.
var Verify = withCommon(verifySource)

var (
	//go:embed backup.sh
	backupSource string
	//go:embed restore.sh
	restoreSource string
	//go:embed password.sh
	passwordSource string
	//go:embed verify.sh
	verifySource string
	//go:embed common.sh
	common string
)

// commonMarker is the line of a script that common.sh replaces.
const commonMarker = "# --- common.sh ---\n"

// withCommon returns script with common.sh in place of its marker line: a
// Job runs one text, so the scripts cannot source their shared helpers.
func withCommon(script string) string {
	if strings.Count(script, commonMarker) != 1 {
		panic("a script of package scripts must have the line " + strings.TrimSpace(commonMarker) + " once")
	}
	return strings.Replace(script, commonMarker, common, 1)
}

// Names of the environment variables the scripts read; doc.go says which
// script reads which and what the defaults are.
const (
	EnvHost           = "MYSQL_HOST"
	EnvPort           = "MYSQL_PORT"
	EnvUser           = "MYSQL_USER"
	EnvPassword       = "MYSQL_PASSWORD"
	EnvNewPassword    = "MYSQL_NEW_PASSWORD"
	EnvDatabase       = "MYSQL_DATABASE"
	EnvBackupDir      = "BACKUP_DIR"
	EnvWaitTimeout    = "WAIT_TIMEOUT"
	EnvTerminationLog = "TERMINATION_LOG"
	// EnvPasswordAlt is a second password the server may have (one a
	// password Job may have set): backup.sh and restore.sh log in with it
	// when the server refuses MYSQL_PASSWORD.
	EnvPasswordAlt = "MYSQL_PASSWORD_ALT"
	// EnvLatestExpected makes backup.sh move latest only if latest names
	// this dump now ("none": only if there is no latest).
	EnvLatestExpected = "LATEST_EXPECTED"
	// EnvRestoreID names one restore of one data volume: restore.sh loads
	// a dump into a database that has tables only when they are from an
	// earlier try of the same restore.
	EnvRestoreID = "RESTORE_ID"
	// EnvRestoreFrom names the dump restore.sh loads instead of the one
	// latest names.
	EnvRestoreFrom = "RESTORE_FROM"
	// EnvKeepBackups is how many dumps backup.sh keeps.
	EnvKeepBackups = "KEEP_BACKUPS"
	// EnvVerifyDump is the dump verify.sh looks for, EnvVerifySize the
	// size backup.sh reported of it, and EnvVerifyLatest "yes" when
	// latest must name it.
	EnvVerifyDump   = "VERIFY_DUMP"
	EnvVerifySize   = "VERIFY_SIZE"
	EnvVerifyLatest = "VERIFY_LATEST"
)

// Defaults the scripts use for unset variables.
const (
	DefaultPort               = 3306
	DefaultUser               = "root"
	DefaultWaitTimeoutSeconds = 60
	DefaultTerminationLog     = "/dev/termination-log"
)

// LatestFile is the file in BACKUP_DIR that names the newest complete dump.
const LatestFile = "latest"

// The variables each script reads, for a Job builder's tests: the test of
// this package checks these lists against the scripts' text.
var (
	BackupEnv = []string{EnvHost, EnvPort, EnvUser, EnvPassword, EnvPasswordAlt, EnvWaitTimeout, EnvTerminationLog,
		EnvDatabase, EnvBackupDir, EnvLatestExpected, EnvKeepBackups}
	RestoreEnv = []string{EnvHost, EnvPort, EnvUser, EnvPassword, EnvPasswordAlt, EnvWaitTimeout, EnvTerminationLog,
		EnvDatabase, EnvBackupDir, EnvRestoreID, EnvRestoreFrom}
	PasswordEnv = []string{EnvHost, EnvPort, EnvUser, EnvPassword, EnvWaitTimeout, EnvTerminationLog, EnvNewPassword}
	VerifyEnv   = []string{EnvTerminationLog, EnvBackupDir, EnvVerifyDump, EnvVerifySize, EnvVerifyLatest}
)

// Command is the container command that runs script (Backup, Restore,
// Password or Verify). It is meant for the container's command, not args, so that the
// image's entrypoint (which would start a server) does not run.
func Command(script string) []string {
	return []string{"bash", "-c", script}
}

// Outcome is what a script reports it did.
type Outcome string

// The outcomes, as the first word of a termination message.
const (
	BackedUp               Outcome = "backed-up"
	BackedUpAside          Outcome = "backed-up-aside"
	Restored               Outcome = "restored"
	NoBackup               Outcome = "no-backup"
	PasswordChanged        Outcome = "password-changed"
	PasswordAlreadyChanged Outcome = "password-already-changed"
	Verified               Outcome = "verified"
	Failed                 Outcome = "failed"
)

// Result is a script's termination message, parsed.
type Result struct {
	Outcome Outcome
	// Dump is the dump's file name in BACKUP_DIR, for BackedUp,
	// BackedUpAside, Restored and Verified.
	Dump string
	// Reason says why, for Failed.
	Reason string
	// Aside is, for Restored and NoBackup, the newest dump on the backup
	// volume that is newer than the one restored (any dump, for NoBackup):
	// one kept aside, which a person may want instead.
	Aside string
	// FreeBytes is the free space of BACKUP_DIR after the script's work,
	// DumpBytes the size of the dump it wrote or restored; -1 when the
	// script did not say.
	FreeBytes, DumpBytes int64
}

// ParseResult parses the termination message a script wrote (see doc.go).
// Surrounding white space is ignored.
func ParseResult(message string) (Result, error) {
	msg := strings.TrimSpace(message)
	if reason, ok := strings.CutPrefix(msg, string(Failed)+":"); ok {
		return Result{Outcome: Failed, Reason: strings.TrimSpace(reason), FreeBytes: -1, DumpBytes: -1}, nil
	}
	if msg == "" {
		return Result{}, fmt.Errorf("empty termination message: the script did not finish (see the pod's log)")
	}
	words := strings.Split(msg, " ")
	r := Result{Outcome: Outcome(words[0]), FreeBytes: -1, DumpBytes: -1}
	rest := words[1:]
	switch r.Outcome {
	case BackedUp, BackedUpAside, Restored, Verified:
		if len(rest) == 0 || strings.Contains(rest[0], "=") || !dumpFile(rest[0]) {
			return Result{}, fmt.Errorf("termination message %q: %s needs one dump file name", msg, r.Outcome)
		}
		r.Dump, rest = rest[0], rest[1:]
	case NoBackup, PasswordChanged, PasswordAlreadyChanged:
	default:
		return Result{}, fmt.Errorf("termination message %q is not one of the scripts' results", msg)
	}
	for _, field := range rest {
		k, v, _ := strings.Cut(field, "=")
		if k == "aside" && r.Aside == "" && (r.Outcome == Restored || r.Outcome == NoBackup) {
			if !dumpFile(v) {
				return Result{}, fmt.Errorf("termination message %q: %q is not a dump file name", msg, v)
			}
			r.Aside = v
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return Result{}, fmt.Errorf("termination message %q: %q is not a size in bytes", msg, field)
		}
		switch {
		case k == "free" && r.FreeBytes < 0:
			r.FreeBytes = n
		case k == "size" && r.DumpBytes < 0 && r.Dump != "":
			r.DumpBytes = n
		default:
			return Result{}, fmt.Errorf("termination message %q: nothing like %q may follow %s", msg, field, r.Outcome)
		}
	}
	return r, nil
}

// dumpFile reports whether name can be a dump's file name in BACKUP_DIR.
func dumpFile(name string) bool {
	return name != "" && !strings.ContainsAny(name, "/\n") && !strings.HasPrefix(name, ".")
}
