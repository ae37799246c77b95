#!/bin/bash
# The entrypoint of the local stand-in for the official mysql image (MariaDB
# from Debian, see scripts/images.sh). Like the official one: on an empty data
# directory it creates the server's files, sets the root password from
# MYSQL_ROOT_PASSWORD (or MYSQL_ALLOW_EMPTY_PASSWORD / MYSQL_RANDOM_ROOT_PASSWORD),
# creates MYSQL_DATABASE and MYSQL_USER / MYSQL_PASSWORD, runs
# /docker-entrypoint-initdb.d, and then runs the server in the foreground.
# Started as root it hands the data directory to user mysql (uid 999) and
# drops to it; started as uid 999 (runAsUser, as the operators do) it runs as
# that user directly.
set -euo pipefail

say() { printf 'docker-entrypoint: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# Options before a command, as in `docker run mysql:8.0 --max-connections=50`.
if [ "${1:-}" = "" ] || [ "${1:0:1}" = - ]; then
	set -- mariadbd "$@"
fi
case $1 in
mysqld | mariadbd) ;;
*) exec "$@" ;; # bash, mysql, mysqldump...: as the official image does
esac
shift
set -- mariadbd "$@"

datadir=/var/lib/mysql
socket=/run/mysqld/mysqld.sock

if [ "$(id -u)" = 0 ]; then
	mkdir -p "$datadir" /run/mysqld
	chown -R mysql:mysql "$datadir" /run/mysqld
	exec setpriv --reuid=mysql --regid=mysql --init-groups "${BASH_SOURCE[0]}" "$@"
fi

# sql runs statements from stdin on the temporary server, as root.
sql() { mariadb --defaults-extra-file="$cnf" --protocol=socket --socket="$socket" "$@"; }

# quote quotes $1 as an SQL string literal.
quote() {
	local v=${1//\\/\\\\}
	printf "'%s'" "${v//\'/\'\'}"
}

initialise() {
	local password=${MYSQL_ROOT_PASSWORD:-} pid
	if [ -z "$password" ] && [ -z "${MYSQL_ALLOW_EMPTY_PASSWORD:-}" ]; then
		[ -n "${MYSQL_RANDOM_ROOT_PASSWORD:-}" ] ||
			die "the database is uninitialised and the root password is not set: set MYSQL_ROOT_PASSWORD (or MYSQL_ALLOW_EMPTY_PASSWORD=yes, or MYSQL_RANDOM_ROOT_PASSWORD=yes)"
		password=$(head -c 18 /dev/urandom | base64)
		say "GENERATED ROOT PASSWORD: $password"
	fi
	say "initialising the database in $datadir"
	mariadb-install-db --datadir="$datadir" --rpm --auth-root-authentication-method=normal \
		--skip-test-db --skip-log-bin --default-time-zone=SYSTEM >/dev/null

	mariadbd --skip-networking --socket="$socket" --skip-log-bin &
	pid=$!
	cnf=$(mktemp)
	printf '[client]\nuser=root\npassword=\n' >"$cnf"
	for _ in $(seq 60); do
		mariadb-admin --defaults-extra-file="$cnf" --socket="$socket" ping >/dev/null 2>&1 && break
		kill -0 "$pid" 2>/dev/null || die "the temporary server stopped; see above"
		sleep 1
	done

	local p
	p=$(quote "$password")
	{
		echo "SET @@SESSION.SQL_LOG_BIN=0;"
		echo "DELETE FROM mysql.global_priv WHERE User = '' OR (User = 'root' AND Host <> 'localhost');"
		echo "FLUSH PRIVILEGES;"
		echo "ALTER USER 'root'@'localhost' IDENTIFIED BY $p;"
		echo "CREATE USER 'root'@'%' IDENTIFIED BY $p;"
		echo "GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION;"
		if [ -n "${MYSQL_DATABASE:-}" ]; then
			echo "CREATE DATABASE IF NOT EXISTS \`${MYSQL_DATABASE//\`/\`\`}\`;"
		fi
		if [ -n "${MYSQL_USER:-}" ] && [ -n "${MYSQL_PASSWORD:-}" ]; then
			echo "CREATE USER $(quote "$MYSQL_USER")@'%' IDENTIFIED BY $(quote "$MYSQL_PASSWORD");"
			if [ -n "${MYSQL_DATABASE:-}" ]; then
				echo "GRANT ALL ON \`${MYSQL_DATABASE//\`/\`\`}\`.* TO $(quote "$MYSQL_USER")@'%';"
			fi
		fi
		echo "FLUSH PRIVILEGES;"
	} | sql
	printf '[client]\nuser=root\npassword=%s\n' "$password" >"$cnf"

	local f
	for f in /docker-entrypoint-initdb.d/*; do
		case $f in
		*.sh)
			say "running $f"
			# shellcheck source=/dev/null # the image user's own scripts
			. "$f"
			;;
		*.sql) say "running $f"; sql ${MYSQL_DATABASE:+"$MYSQL_DATABASE"} <"$f" ;;
		*.sql.gz) say "running $f"; gzip -dc "$f" | sql ${MYSQL_DATABASE:+"$MYSQL_DATABASE"} ;;
		*) [ ! -e "$f" ] || say "ignoring $f" ;;
		esac
	done

	kill "$pid"
	wait "$pid" || true
	rm -f "$cnf"
	say "database initialised; starting the server"
}

if [ ! -d "$datadir/mysql" ]; then
	initialise
fi
exec "$@"
