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
db=${MYSQL_DATABASE:-}
restore_from=${RESTORE_FROM:-}
restore_id=${RESTORE_ID:-}
[[ $restore_id =~ ^[-0-9A-Za-z]{0,64}$ ]] || fail "RESTORE_ID=$restore_id may hold letters, digits and - only"

# newer_than prints the name of the newest dump in BACKUP_DIR that is newer
# than dump $1 (any dump when $1 is empty): a dump kept aside that a person
# may want instead of the one restored.
newer_than() {
	local f newest=
	shopt -s nullglob
	for f in "$backup_dir"/*.sql.gz; do
		[[ ${f##*/} != "$1" ]] || continue
		[[ -z $1 || $f -nt $backup_dir/$1 ]] || continue
		[[ -n $newest && ! $f -nt $newest ]] || newest=$f
	done
	[[ -z $newest ]] || printf ' aside=%s' "${newest##*/}"
}

# No latest means no backup was ever made the one to restore: there is
# nothing to restore, and the server is not needed to say so. A dump kept
# aside is named in the result, so that nobody is told there is no backup
# while one is there.
if [[ -z $restore_from && ! -e $backup_dir/latest ]]; then
	aside=$(newer_than "")
	if [[ -n $aside ]]; then
		log "no latest file in $backup_dir: restoring nothing; the newest dump there, kept aside, is ${aside# aside=}"
	else
		log "no backup in $backup_dir: nothing to restore"
	fi
	result "no-backup$aside$(sizes "$backup_dir")"
	exit 0
fi

# RESTORE_FROM, when set, names the dump to load instead of latest's.
name=$restore_from
source=RESTORE_FROM
if [[ -z $name ]]; then
	source=$backup_dir/latest
	IFS= read -r name <"$backup_dir/latest" || [[ -n $name ]] || fail "cannot read $backup_dir/latest, or it is empty"
fi
[[ $name == *.sql.gz && $name != */* && $name != .* ]] || fail "$source names '$name', which is not a dump file name"
dump=$backup_dir/$name
[[ -f $dump && -r $dump ]] || fail "$source names $name, but there is no readable $dump; older dumps are still in $backup_dir"
# A dump that is cut short would drop tables and not recreate them all:
# check it is whole before the server sees a line of it.
check_dump "$dump" "$name"

cnf=$workdir/client.cnf
client_cnf "$cnf" "${MYSQL_PASSWORD:-}"
wait_for_server "$cnf"
choose_password "$cnf" "${MYSQL_PASSWORD_ALT:-}"

# The dump drops and recreates its tables: loaded into a database that
# already has tables, it would replace rows someone wrote before the
# restore. Such a database is left as it is, unless its tables are this
# restore's own, from an earlier try of the same restore (RESTORE_ID) that
# stopped halfway.
marker=
[[ -z $restore_id ]] || marker=$backup_dir/.restoring-$restore_id
# A marker of another restore is of a data volume that is gone.
shopt -s nullglob
for leftover in "$backup_dir"/.restoring-*; do
	[[ $leftover == "$marker" ]] || rm -f -- "$leftover"
done
shopt -u nullglob
if [[ -n $db && ( -z $marker || ! -e $marker ) ]]; then
	if ! tables=$(printf "SET SESSION sql_mode = '';\nSELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY table_name;\n" "$(sql_string "$db")" |
		"$mysql_bin" --defaults-extra-file="$cnf" --batch --skip-column-names 2>"$workdir/tables.err"); then
		fail "cannot list the tables of \`$db\` at $host:$port: $(oneline "$workdir/tables.err")"
	fi
	if [[ -n $tables ]]; then
		fail "database \`$db\` at $host:$port already has tables (${tables//$'\n'/, }) written before the restore: $name was not loaded, so that nothing written there is lost"
	fi
fi
if [[ -n $marker ]]; then
	: >"$marker" || fail "cannot create a file in BACKUP_DIR=$backup_dir"
	sync_path "$backup_dir"
fi

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
[[ -z $marker ]] || rm -f -- "$marker"

aside=$(newer_than "$name")
log "restored $name into $host:$port in $((SECONDS - started))s"
[[ -z $aside ]] || log "a newer dump, kept aside, is in $backup_dir: ${aside# aside=}"
result "restored $name$aside$(sizes "$backup_dir" "$dump")"
