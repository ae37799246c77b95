# common.sh: the helpers every script of this package carries. A Job runs
# one text with bash -c, so a script cannot source a file: scripts.go puts
# this text where a script has the line "# --- common.sh ---".
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

# sql_string quotes $1 as an SQL string literal, for a session whose
# sql_mode has no NO_BACKSLASH_ESCAPES (the scripts set it to '' first), so
# that backslashes are escapes there.
sql_string() {
	local v=${1//\\/\\\\}
	v=${v//\'/\'\'}
	printf "'%s'" "$v"
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
# server's own message, instead of after a long wait. A server that
# refuses this host (ERROR 1130, "Host ... is not allowed to connect") fails
# the ping, but answers: waiting would not change its grants (a data
# directory two servers initialised at once has no root but the local one).
wait_for_server() {
	local cnf=$1 start=$SECONDS next=$SECONDS
	until "$admin_bin" --defaults-extra-file="$cnf" --connect-timeout=5 ping >/dev/null 2>"$workdir/ping.err"; do
		if [[ $(<"$workdir/ping.err") == *"is not allowed to connect to this"* ]]; then
			fail "the MySQL server at $host:$port refuses connections from this pod's address: $(oneline "$workdir/ping.err")"
		fi
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

# choose_password writes to option file $1 the password the server takes:
# MYSQL_PASSWORD, or $2 (MYSQL_PASSWORD_ALT) when the server refuses the
# first (a password change may have set it), and fails when it takes
# neither.
choose_password() {
	local cnf=$1 alt=$2
	client_cnf "$cnf" "${MYSQL_PASSWORD:-}"
	login "$cnf" password && return 0
	if ! denied password || [[ -z $alt ]]; then
		fail "cannot log in to $host:$port as $user: $(oneline "$workdir/password.err")"
	fi
	client_cnf "$cnf" "$alt"
	if login "$cnf" alternate; then
		log "the server refuses MYSQL_PASSWORD for $user; MYSQL_PASSWORD_ALT logs in"
		return 0
	fi
	denied alternate && fail "$host:$port accepts neither MYSQL_PASSWORD nor MYSQL_PASSWORD_ALT for user $user"
	fail "cannot log in to $host:$port as $user: $(oneline "$workdir/alternate.err")"
}

# free_bytes prints the free space of the filesystem of directory $1, or
# nothing when it cannot be measured.
free_bytes() {
	local free
	free=$(df -P -B1 -- "$1" 2>/dev/null | awk 'NR == 2 { print $4 }') || return 0
	[[ $free =~ ^[0-9]+$ ]] && printf '%s' "$free"
	return 0
}

# sizes prints the result's " free=N" field for directory $1, and
# " size=N" for file $2 if given, for the operator's BackupSpace condition.
sizes() {
	local free
	free=$(free_bytes "$1")
	[[ -z $free ]] || printf ' free=%s' "$free"
	[[ -z ${2:-} ]] || printf ' size=%s' "$(file_size "$2")"
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

