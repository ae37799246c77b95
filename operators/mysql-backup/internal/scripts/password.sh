#!/usr/bin/env bash
# password.sh: change the password of a MySQL user (root by default) on
# both its '%' and 'localhost' accounts, idempotently. The contract
# (environment, termination message) is in doc.go beside this file; the
# operator runs this text with bash -c in the MySQL image, for its client
# tools.
set -euo pipefail
umask 077

readonly self=password.sh

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

cleanup() { :; }

# sql_string quotes $1 as an SQL string literal. The ALTER USER batch turns
# NO_BACKSLASH_ESCAPES off first, so backslashes are escapes there.
sql_string() {
	local v=${1//\\/\\\\}
	v=${v//\'/\'\'}
	printf "'%s'" "$v"
}

# redact prints the ERROR lines of file $1 as one line, without either
# password, raw or escaped: the client echoes a failed statement, and a
# syntax error quotes it.
redact() {
	local text='' secret quoted line
	while IFS= read -r line || [[ -n $line ]]; do
		[[ $line != ERROR* ]] || text+="${text:+ }$line"
	done <"$1"
	[[ -n $text ]] || text=$(oneline "$1")
	for secret in "$current" "$new"; do
		quoted=$(sql_string "$secret")
		quoted=${quoted:1:${#quoted}-2}
		text=${text//"$quoted"/<password>}
		text=${text//"$secret"/<password>}
	done
	if [[ $text == *"ERROR 1064"* ]]; then
		text="${text%%near*}(statement not shown: it holds a password)"
	fi
	printf '%s' "$text"
}

# login succeeds when option file $1 logs in; the client's error is left
# in $workdir/$2.err.
login() {
	"$mysql_bin" --defaults-extra-file="$1" --connect-timeout=10 --batch --skip-column-names \
		-e 'SELECT 1' >/dev/null 2>"$workdir/$2.err"
}

# denied is true when the login named $1 failed because the server refused
# the password (ERROR 1045), not because it could not be reached.
denied() {
	[[ $(<"$workdir/$1.err") == *"ERROR 1045"* ]]
}

accounts=
alter_error=
# alter_password logs in with option file $1 and sets the new password on
# the user's '%' and 'localhost' accounts, those of them that exist, in one
# statement so that both change or neither does. On failure it leaves the
# reason in alter_error and returns 1.
alter_password() {
	local cnf=$1 hosts_text h joined
	local -a hosts=() clauses=()
	if ! hosts_text=$("$mysql_bin" --defaults-extra-file="$cnf" --batch --skip-column-names \
		-e "SELECT Host FROM mysql.user WHERE User = $(sql_string "$user") AND Host IN ('%', 'localhost') ORDER BY Host" \
		2>"$workdir/hosts.err"); then
		alter_error="cannot list the accounts of user $user at $host:$port: $(oneline "$workdir/hosts.err")"
		return 1
	fi
	[[ -z $hosts_text ]] || mapfile -t hosts <<<"$hosts_text"
	if ((${#hosts[@]} == 0)); then
		alter_error="user $user has neither a '%' nor a 'localhost' account at $host:$port: nothing to change"
		return 1
	fi
	accounts=
	for h in "${hosts[@]}"; do
		clauses+=("$(sql_string "$user")@$(sql_string "$h") IDENTIFIED BY $(sql_string "$new")")
		accounts+="${accounts:+ and }$user@'$h'"
	done
	joined=$(
		IFS=,
		printf '%s' "${clauses[*]}"
	)
	# printf is a builtin: the statement goes through a pipe, never argv.
	if ! printf "SET SESSION sql_mode = '';\nALTER USER IF EXISTS %s;\n" "$joined" |
		"$mysql_bin" --defaults-extra-file="$cnf" 2>"$workdir/alter.err"; then
		alter_error="ALTER USER for $accounts at $host:$port failed: $(redact "$workdir/alter.err")"
		return 1
	fi
}

read_connection
require MYSQL_PASSWORD "set it to the current password of $user"
require MYSQL_NEW_PASSWORD "set it to the password to set"
current=${MYSQL_PASSWORD:-}
new=${MYSQL_NEW_PASSWORD:-}

current_cnf=$workdir/current.cnf
new_cnf=$workdir/new.cnf
client_cnf "$current_cnf" "$current"
client_cnf "$new_cnf" "$new"
wait_for_server "$current_cnf"

if login "$current_cnf" current; then
	alter_password "$current_cnf" || fail "$alter_error"
	login "$new_cnf" verify ||
		fail "ALTER USER ran, but $host:$port refuses the new password: $(oneline "$workdir/verify.err")"
	log "changed the password of $accounts at $host:$port"
	result "password-changed"
elif denied current; then
	if login "$new_cnf" new; then
		# A run that was stopped halfway may have changed the password and
		# not reported it: the new password works, so the change is done.
		# Setting it again, best effort, brings the other account along.
		if alter_password "$new_cnf"; then
			log "already changed: $host:$port accepts the new password for $user; set it again on $accounts"
		else
			log "already changed: $host:$port accepts the new password for $user (warning: setting it again failed: $alter_error)"
		fi
		result "password-already-changed"
	elif denied new; then
		fail "$host:$port accepts neither MYSQL_PASSWORD nor MYSQL_NEW_PASSWORD for user $user: set MYSQL_PASSWORD to the password the server has now"
	else
		fail "$host:$port refuses the current password for user $user, and the new one could not be tried: $(oneline "$workdir/new.err")"
	fi
else
	fail "cannot log in to $host:$port as $user: $(oneline "$workdir/current.err")"
fi
