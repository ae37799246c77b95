#!/usr/bin/env bash
# backup.sh: dump one database of a MySQL server to BACKUP_DIR, never
# losing an older dump. The contract (environment, files, termination
# message) is in doc.go beside this file; the operator runs this text with
# bash -c in the MySQL image, for its client tools.
set -euo pipefail
umask 077

readonly self=backup.sh

# --- common: begin (the same in backup.sh, restore.sh and password.sh) ---

log() { printf '%s: %s\n' "$self" "$*"; }

# oneline prints file $1 as one line of at most 400 characters, without
# blank lines or control characters (mysqladmin starts errors with a bell),
# for messages that must fit a pod's termination message.
oneline() {
	local line text=
	[[ -s $1 ]] || return 0
	while IFS= read -r line || [[ -n $line ]]; do
		line=${line//$'\a'/}
		line=${line//[[:cntrl:]]/ }
		[[ -n ${line// /} ]] || continue
		text+="${text:+ }$line"
	done <"$1"
	printf '%s' "${text:0:400}"
}

result_written=
# result writes the one-line outcome to TERMINATION_LOG, where Kubernetes
# reads a container's termination message; silently skipped where there
# is no such directory (a run outside a pod).
result() {
	local path=${TERMINATION_LOG:-/dev/termination-log} dir
	dir=.
	[[ $path == */* ]] && dir=${path%/*}
	[[ -n $dir ]] || dir=/
	result_written=1
	[[ -d $dir ]] || return 0
	printf '%s' "$1" 2>/dev/null >"$path" || true
}

fail() {
	printf '%s: error: %s\n' "$self" "$*" >&2
	result "failed: $*"
	exit 1
}

workdir=
on_exit() {
	local status=$?
	cleanup
	[[ -z $workdir ]] || rm -rf -- "$workdir"
	if ((status != 0)) && [[ -z $result_written ]]; then
		result "failed: $self exited with status $status; see the pod's log"
	fi
	exit "$status"
}
trap on_exit EXIT
# PID 1 in a container ignores signals it does not trap.
trap 'exit 143' TERM
trap 'exit 130' INT

require() {
	[[ -n ${!1:-} ]] || fail "$1 is not set: $2"
}

# pick prints the path of the first of the named programs that exists:
# MariaDB images name the clients mariadb*, MySQL images mysql*. It runs in
# $(...), a subshell, so the caller reports a failure.
pick() {
	local name
	for name in "$@"; do
		if command -v "$name" 2>/dev/null; then
			return 0
		fi
	done
	return 1
}

# opt_value quotes $1 for a MySQL option file: inside double quotes the
# client unescapes \\ \" \n \r \t, so any password survives.
opt_value() {
	local v=$1
	v=${v//\\/\\\\}
	v=${v//\"/\\\"}
	v=${v//$'\n'/\\n}
	v=${v//$'\r'/\\r}
	v=${v//$'\t'/\\t}
	printf '"%s"' "$v"
}

# client_cnf writes an option file for the user and password $2 to $1, so
# that no password is ever on a command line (other processes can read
# those) nor in MYSQL_PWD (deprecated by MySQL 8).
client_cnf() {
	local h u p
	h=$(opt_value "$host")
	u=$(opt_value "$user")
	p=$(opt_value "$2")
	printf '[client]\nhost=%s\nport=%s\nuser=%s\npassword=%s\n' "$h" "$port" "$u" "$p" >"$1"
}

# read_connection reads and checks the server's address and the user, and
# makes the private directory for option files and captured errors.
read_connection() {
	require MYSQL_HOST "set it to the MySQL Service's name"
	host=$MYSQL_HOST
	port=${MYSQL_PORT:-3306}
	user=${MYSQL_USER:-root}
	[[ $port =~ ^[0-9]{1,5}$ ]] || fail "MYSQL_PORT=$port is not a port number"
	wait_timeout=${WAIT_TIMEOUT:-60}
	[[ $wait_timeout =~ ^[0-9]{1,5}$ ]] || fail "WAIT_TIMEOUT=$wait_timeout is not a number of seconds"
	workdir=$(mktemp -d) || fail "cannot create a temporary directory (is TMPDIR, or /tmp, writable?)"
	# shellcheck disable=SC2034 # backup.sh needs only the other two
	mysql_bin=$(pick mariadb mysql) || fail "neither mariadb nor mysql is in the image; use a MySQL or MariaDB image"
	admin_bin=$(pick mariadb-admin mysqladmin) || fail "neither mariadb-admin nor mysqladmin is in the image; use a MySQL or MariaDB image"
}

# wait_for_server waits until the server at host:port answers, at most
# WAIT_TIMEOUT seconds. mysqladmin ping succeeds even when the password is
# refused: a wrong password then fails at once in the next step, with the
# server's own message, instead of after a long wait.
wait_for_server() {
	local cnf=$1 start=$SECONDS next=$SECONDS
	until "$admin_bin" --defaults-extra-file="$cnf" --connect-timeout=5 ping >/dev/null 2>"$workdir/ping.err"; do
		if ((SECONDS - start >= wait_timeout)); then
			fail "the MySQL server at $host:$port did not answer within ${wait_timeout}s: $(oneline "$workdir/ping.err")"
		fi
		if ((SECONDS >= next)); then
			log "waiting for the MySQL server at $host:$port ($((SECONDS - start))s of ${wait_timeout}s): $(oneline "$workdir/ping.err")"
			next=$((SECONDS + 5))
		fi
		sleep 1
	done
	log "the MySQL server at $host:$port answers"
}

# check_dump fails unless $1 is a whole gzip file whose text ends with the
# trailer mysqldump writes last, after everything else succeeded.
check_dump() {
	gzip -t "$1" 2>"$workdir/gzip.err" || fail "$2 is not a valid gzip file: $(oneline "$workdir/gzip.err")"
	local last
	last=$(gzip -dc "$1" | tail -n 1) || true
	[[ $last == "-- Dump completed"* ]] || fail "$2 is incomplete: it does not end with mysqldump's '-- Dump completed' line"
}

# sync_path flushes $1 (a file or a directory) to disk; coreutils before
# 8.24 cannot sync one file, so it falls back to syncing everything.
sync_path() {
	sync -- "$1" 2>/dev/null || sync
}

file_size() {
	local size
	size=$(wc -c <"$1")
	printf '%s' "$((size))"
}

# --- common: end ---

tmp=
latest_tmp=
cleanup() {
	[[ -z $tmp ]] || rm -f -- "$tmp"
	[[ -z $latest_tmp ]] || rm -f -- "$latest_tmp"
}

read_connection
require MYSQL_DATABASE "set it to the database to back up"
db=$MYSQL_DATABASE
[[ $db != */* && $db != .* ]] || fail "MYSQL_DATABASE=$db cannot be part of a file name"
require BACKUP_DIR "set it to the backup volume's mount path"
backup_dir=${BACKUP_DIR:-}
[[ -d $backup_dir && -w $backup_dir ]] || fail "BACKUP_DIR=$backup_dir is not a writable directory: mount the backup volume there"
dump_bin=$(pick mariadb-dump mysqldump) || fail "neither mariadb-dump nor mysqldump is in the image; use a MySQL or MariaDB image"

cnf=$workdir/client.cnf
client_cnf "$cnf" "${MYSQL_PASSWORD:-}"
wait_for_server "$cnf"

# --single-transaction: a consistent InnoDB snapshot without locking the
# server. --databases: the dump creates and selects its database, so a
# restore needs no name. --hex-blob and utf8mb4: binary and 4-byte
# characters come back byte for byte. --no-tablespaces: MySQL 8.0.21+
# would otherwise need the PROCESS privilege.
dump_args=(
	--single-transaction --quick
	--routines --triggers --events
	--hex-blob --default-character-set=utf8mb4
	--no-tablespaces --max-allowed-packet=1G
)
# MySQL's mysqldump (not MariaDB's) writes SET @@GLOBAL.GTID_PURGED when
# GTIDs are on, which a restore into a used server refuses.
dump_help=$("$dump_bin" --help 2>/dev/null || true)
if [[ $dump_help == *--set-gtid-purged* ]]; then
	dump_args+=(--set-gtid-purged=OFF)
fi

stamp=$(date -u +%Y%m%dT%H%M%SZ)
tmp=$(mktemp "$backup_dir/.backup-tmp.XXXXXX") || fail "cannot create a file in BACKUP_DIR=$backup_dir"
log "dumping database \`$db\` from $host:$port"
started=$SECONDS
set +e
"$dump_bin" --defaults-extra-file="$cnf" "${dump_args[@]}" --databases "$db" 2>"$workdir/dump.err" | gzip -c >"$tmp"
status=("${PIPESTATUS[@]}")
set -e
if [[ -s $workdir/dump.err ]]; then
	cat -- "$workdir/dump.err" >&2
fi
if ((status[0] != 0)); then
	fail "mysqldump of database \`$db\` at $host:$port failed (status ${status[0]}): $(oneline "$workdir/dump.err")"
fi
if ((${status[1]:-1} != 0)); then
	fail "writing the compressed dump to $backup_dir failed (is the backup volume full?)"
fi
check_dump "$tmp" "the new dump"
sync_path "$tmp"
chmod 0640 -- "$tmp"

# The final name is never reused: a second backup in the same second gets
# a suffix, and mv -n refuses to replace a file that appeared meanwhile.
for ((n = 0; ; n++)); do
	((n < 100)) || fail "cannot find a free name for the new dump in $backup_dir"
	name="$db-$stamp.sql.gz"
	((n == 0)) || name="$db-$stamp-$n.sql.gz"
	target=$backup_dir/$name
	[[ -e $target ]] && continue
	if ! mv -n -- "$tmp" "$target" 2>"$workdir/mv.err" && [[ -e $tmp && ! -e $target ]]; then
		fail "cannot rename the new dump to $target: $(oneline "$workdir/mv.err")"
	fi
	[[ -e $tmp ]] || break
done
tmp=
sync_path "$backup_dir"

# latest is replaced by rename, so a reader sees the old name or the new
# one, never a partial file.
latest_tmp=$(mktemp "$backup_dir/.latest-tmp.XXXXXX") || fail "cannot create a file in BACKUP_DIR=$backup_dir"
printf '%s\n' "$name" >"$latest_tmp"
chmod 0640 -- "$latest_tmp"
sync_path "$latest_tmp"
mv -f -- "$latest_tmp" "$backup_dir/latest" || fail "cannot update $backup_dir/latest (the dump $name is complete)"
latest_tmp=
sync_path "$backup_dir"

log "wrote $name ($(file_size "$backup_dir/$name") bytes) to $backup_dir in $((SECONDS - started))s; latest -> $name"
result "backed-up $name"
