#!/usr/bin/env bash
# backup.sh: dump one database of a MySQL server to BACKUP_DIR, never
# losing an older dump. The contract (environment, files, termination
# message) is in doc.go beside this file; the operator runs this text with
# bash -c in the MySQL image, for its client tools.
set -euo pipefail
umask 077

readonly self=backup.sh

# --- common.sh ---

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
