#!/usr/bin/env bash
# restore.sh: load the dump that BACKUP_DIR/latest names into a MySQL
# server, or report that there is none. The contract (environment, files,
# termination message) is in doc.go beside this file; the operator runs this
# text with bash -c in the MySQL image, for its client tools.
set -euo pipefail
umask 077

readonly self=restore.sh

# --- common.sh ---

cleanup() { :; }

read_connection
require BACKUP_DIR "set it to the backup volume's mount path"
backup_dir=${BACKUP_DIR:-}
[[ -d $backup_dir ]] || fail "BACKUP_DIR=$backup_dir is not a directory: mount the backup volume there"

# No latest means no backup ever completed: there is nothing to restore,
# and the server is not needed to say so.
if [[ ! -e $backup_dir/latest ]]; then
	shopt -s nullglob
	dumps=("$backup_dir"/*.sql.gz)
	if ((${#dumps[@]} > 0)); then
		log "warning: $backup_dir has ${#dumps[@]} dump(s) but no latest file; restoring none (write a dump's name to latest to restore it)"
	fi
	log "no backup in $backup_dir: nothing to restore"
	result "no-backup$(sizes "$backup_dir")"
	exit 0
fi

name=
IFS= read -r name <"$backup_dir/latest" || [[ -n $name ]] || fail "cannot read $backup_dir/latest, or it is empty"
[[ $name == *.sql.gz && $name != */* && $name != .* ]] || fail "$backup_dir/latest names '$name', which is not a dump file name"
dump=$backup_dir/$name
[[ -f $dump && -r $dump ]] || fail "$backup_dir/latest names $name, but there is no readable $dump; older dumps are still in $backup_dir"
# A dump that is cut short would drop tables and not recreate them all:
# check it is whole before the server sees a line of it.
check_dump "$dump" "$name"

cnf=$workdir/client.cnf
client_cnf "$cnf" "${MYSQL_PASSWORD:-}"
wait_for_server "$cnf"
choose_password "$cnf" "${MYSQL_PASSWORD_ALT:-}"

log "restoring $name ($(file_size "$dump") bytes) into $host:$port"
started=$SECONDS
set +e
gzip -dc -- "$dump" | "$mysql_bin" --defaults-extra-file="$cnf" --default-character-set=utf8mb4 --max-allowed-packet=1G 2>"$workdir/mysql.err"
status=("${PIPESTATUS[@]}")
set -e
if [[ -s $workdir/mysql.err ]]; then
	cat -- "$workdir/mysql.err" >&2
fi
if ((status[0] != 0)); then
	fail "cannot read $dump (status ${status[0]})"
fi
if ((${status[1]:-1} != 0)); then
	fail "loading $name into $host:$port failed (status ${status[1]:-?}): $(oneline "$workdir/mysql.err")"
fi

log "restored $name into $host:$port in $((SECONDS - started))s"
result "restored $name$(sizes "$backup_dir" "$dump")"
