// Package scripts holds the bash scripts that the mysql-backup operator's
// Jobs run, byte for byte, and the names they share with the operator.
//
// The Jobs run in the MySQL image the MySQL names (mysql:8.0, mysql:5.7, a
// MariaDB image), for its client tools, with the container command
// Command(script), that is bash -c and the script's text: no ConfigMap, no
// image of our own. Their shared helpers live in common.sh, which the Go
// side inserts into each script (a single text cannot source a file). The
// scripts use bash, gzip and coreutils, and the
// clients under either name: mariadb, mariadb-dump and mariadb-admin
// where they exist (MariaDB deprecates the mysql* names), else mysql,
// mysqldump and mysqladmin.
//
// # Environment
//
// Every script but verify.sh reads:
//
//   - MYSQL_HOST (required): the server, normally its Service's name.
//   - MYSQL_PORT: default 3306.
//   - MYSQL_USER: default root.
//   - MYSQL_PASSWORD: that user's password, from the MySQL's Secret. The
//     scripts write it to a client option file (mode 0600, in a private
//     mktemp -d directory under TMPDIR or /tmp, removed on exit) and pass
//     --defaults-extra-file: never on a command line, which other
//     processes can read, nor in MYSQL_PWD, which MySQL 8 deprecates.
//   - WAIT_TIMEOUT: how long to wait for the server to answer, in seconds;
//     default 60. A progress line is printed every 5 seconds meanwhile.
//   - TERMINATION_LOG: where to write the one-line result; default
//     /dev/termination-log, the container's terminationMessagePath. Writing
//     is skipped when the file's directory does not exist.
//
// backup.sh and restore.sh also read MYSQL_PASSWORD_ALT: a second password
// the server may have (one a password Job may have set). When the server
// refuses MYSQL_PASSWORD (ERROR 1045) they log in with it; when it refuses
// both they fail saying so. Unset or empty, a refused MYSQL_PASSWORD fails
// as before.
//
// backup.sh also reads MYSQL_DATABASE (required: the database to dump; its
// name may hold '-' or '$', but not start with '-', which the dump tool
// would read as an option: such a name is refused, and the name is passed
// after --), BACKUP_DIR (required: the backup volume's mount path), and:
//
//   - LATEST_EXPECTED: the new dump becomes latest only if latest names
//     this dump now ("none": only if there is no latest); otherwise it is
//     kept aside, under its own name. The operator passes the dump the
//     server was restored from ("none" when it restored none or its
//     restore is not known to have finished), so latest only moves
//     forward. A BACKUP_DIR that holds no latest and no dump but the new
//     one has no backup to hide: the dump becomes latest whatever this
//     says (a backup volume made anew, after the one the server was
//     restored from was deleted). Unset: latest always moves (a run by
//     hand).
//   - KEEP_BACKUPS: a positive number; after the new dump, the oldest dumps
//     (by modification time) beyond that many are deleted, never the new
//     one nor the one latest names. Unset: every dump is kept.
//
// restore.sh reads BACKUP_DIR (required), MYSQL_DATABASE (the database
// that must have no tables before a load), RESTORE_ID (letters, digits and
// -: one restore of one data volume, whose earlier, interrupted try may
// have left tables) and RESTORE_FROM (a dump to load instead of the one
// latest names). password.sh reads
// MYSQL_NEW_PASSWORD (required), and needs MYSQL_PASSWORD set.
//
// Some of these names are also read by the official images' entrypoint,
// with another meaning (MYSQL_USER and MYSQL_PASSWORD create a second user
// there, and MYSQL_USER=root stops the mysql image from starting): set them
// on the Jobs' containers only, never on the server's.
//
// # backup.sh
//
// It waits for the server, then runs mysqldump --single-transaction
// --routines --triggers --events --hex-blob --databases MYSQL_DATABASE
// (utf8mb4; --set-gtid-purged=OFF where the client has it), gzipped, into a
// hidden temporary file .backup-tmp.XXXXXX in BACKUP_DIR. It checks that the
// gzip is whole and that the text ends with mysqldump's "-- Dump completed"
// line, syncs it, and renames it to MYSQL_DATABASE-YYYYMMDDTHHMMSSZ.sql.gz
// (UTC; -1, -2... is added rather than replace a file of the same second).
// Then, unless the dump is kept aside (LATEST_EXPECTED), it
// replaces the file latest, by rename, with one holding that name and a
// newline. Dumps and latest are mode 0640. Older dumps are deleted only
// beyond KEEP_BACKUPS. On any failure it exits non-zero and removes its temporary file;
// latest and every earlier dump stay as they were. A Job killed with
// SIGKILL can leave a .backup-tmp.* or .latest-tmp.* file behind: it is
// never read, and the next backup removes it.
//
// # restore.sh
//
// Without BACKUP_DIR/latest (and RESTORE_FROM) it prints that there is
// nothing to restore and exits 0, without contacting the server; if dumps
// are there all the same, its result names the newest. Otherwise it checks
// the dump that latest (or RESTORE_FROM) names (as backup.sh does) before
// the server sees a line of it, and waits for the server. The dump drops
// and recreates each table: so that no row written before the restore is
// lost, it is loaded only into a MYSQL_DATABASE without tables, or whose
// tables an earlier try of the same RESTORE_ID left (the file
// .restoring-RESTORE_ID in BACKUP_DIR says a try began; it goes once the
// load succeeded, and a restore removes the files of other IDs). The dump
// creates its database if needed, so a second restore gives the same data,
// not twice the rows. The dump restores the database it was taken of. The
// result names the newest dump newer than the one loaded, if any: one kept
// aside.
//
// # verify.sh
//
// It runs after backup.sh, in a Job of its own that mounts the backup
// volume read-only, and needs no server: it checks that VERIFY_DUMP
// (required, the dump's file name backup.sh reported) is a file in
// BACKUP_DIR (required), of VERIFY_SIZE bytes when that is set (the size
// backup.sh reported), a whole gzip file ending with mysqldump's
// "-- Dump completed" line, and, with VERIFY_LATEST=yes, the one latest
// names. It reads TERMINATION_LOG as every script does, and no other
// variable of the server's. The operator counts a backup only once this
// succeeded and the backup volume is still the one both Jobs used.
//
// # password.sh
//
// It waits for the server and logs in as MYSQL_USER with MYSQL_PASSWORD. If
// that works, one ALTER USER IF EXISTS statement sets MYSQL_NEW_PASSWORD on
// the user's '%' and 'localhost' accounts, those that exist, and the script
// checks that the new password logs in. If the server refuses the current
// password but takes the new one, the change was already made: it sets it
// again on both accounts (best effort, for a run stopped halfway) and exits
// 0. If it refuses both, it exits 1 and says so. The new password reaches
// the server as an SQL string in a pipe, quotes and backslashes escaped,
// with NO_BACKSLASH_ESCAPES off for that session.
//
// # Result
//
// Each script writes one line, without a newline, to TERMINATION_LOG, which
// the operator reads from the pod's terminated state and ParseResult
// understands:
//
//	backed-up <dump>            backup.sh succeeded; latest names <dump>
//	backed-up-aside <dump>      backup.sh succeeded; latest is unchanged
//	restored <dump>             restore.sh loaded <dump>
//	no-backup                   restore.sh found no latest
//	password-changed            password.sh changed the password
//	password-already-changed    the new password already worked
//	verified <dump>             verify.sh found <dump> as reported
//	failed: <reason>            any script, with a non-zero exit status
//
// restored and no-backup add " aside=<dump>" for a newer dump (any dump,
// for no-backup) that was not restored. backup.sh, restore.sh and
// verify.sh add
// " free=<bytes>", the free space of
// BACKUP_DIR (left out when df cannot say), and, after a dump's name,
// " size=<bytes>", its size: the operator's BackupSpace condition.
//
// No script prints a password, in its output, its errors or its result.
package scripts
