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
[[ $db != -* ]] || fail "MYSQL_DATABASE=$db starts with -, which the dump tool would read as an option"
latest_expected=${LATEST_EXPECTED:-}
keep=${KEEP_BACKUPS:-}
[[ -z $keep || $keep =~ ^[1-9][0-9]{0,5}$ ]] || fail "KEEP_BACKUPS=$keep is not a positive number of dumps (leave it unset to keep them all)"
require BACKUP_DIR "set it to the backup volume's mount path"
backup_dir=${BACKUP_DIR:-}
[[ -d $backup_dir && -w $backup_dir ]] || fail "BACKUP_DIR=$backup_dir is not a writable directory: mount the backup volume there"
dump_bin=$(pick mariadb-dump mysqldump) || fail "neither mariadb-dump nor mysqldump is in the image; use a MySQL or MariaDB image"

cnf=$workdir/client.cnf
client_cnf "$cnf" "${MYSQL_PASSWORD:-}"
wait_for_server "$cnf"
choose_password "$cnf" "${MYSQL_PASSWORD_ALT:-}"

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

# A backup killed with SIGKILL cannot remove its temporary files: the next
# one does. Only one backup of a MySQL runs at a time, and its volume is
# its own.
shopt -s nullglob
for leftover in "$backup_dir"/.backup-tmp.* "$backup_dir"/.latest-tmp.*; do
	rm -f -- "$leftover" && log "removed ${leftover##*/}, left by a backup that was killed"
done
shopt -u nullglob

stamp=$(date -u +%Y%m%dT%H%M%SZ)
tmp=$(mktemp "$backup_dir/.backup-tmp.XXXXXX") || fail "cannot create a file in BACKUP_DIR=$backup_dir"
log "dumping database \`$db\` from $host:$port"
started=$SECONDS
set +e
"$dump_bin" --defaults-extra-file="$cnf" "${dump_args[@]}" --databases -- "$db" 2>"$workdir/dump.err" | gzip -c >"$tmp"
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

# latest only moves forward: only from the dump the server was restored
# from (LATEST_EXPECTED), so a stale server, or one that never got its data
# back, never hides a newer backup.
aside=
if [[ -n $latest_expected ]]; then
	current=none
	if [[ -e $backup_dir/latest ]]; then
		IFS= read -r current <"$backup_dir/latest" || [[ -n $current ]] || current=
	fi
	[[ $current == "$latest_expected" ]] || aside="latest names ${current:-nothing readable}, not $latest_expected, which this server was restored from"
	if [[ -n $aside && ! -e $backup_dir/latest ]]; then
		# A volume with no latest and no dump but this one (a backup volume
		# made anew after the one the server was restored from was
		# deleted) has no newer backup for this dump to hide.
		shopt -s nullglob
		others=("$backup_dir"/*.sql.gz)
		shopt -u nullglob
		if ((${#others[@]} == 1)); then
			log "$backup_dir has no backup but this one: it becomes latest, though the server was restored from $latest_expected"
			aside=
		fi
	fi
fi

if [[ -z $aside ]]; then
	# latest is replaced by rename, so a reader sees the old name or the
	# new one, never a partial file.
	latest_tmp=$(mktemp "$backup_dir/.latest-tmp.XXXXXX") || fail "cannot create a file in BACKUP_DIR=$backup_dir"
	printf '%s\n' "$name" >"$latest_tmp"
	chmod 0640 -- "$latest_tmp"
	sync_path "$latest_tmp"
	mv -f -- "$latest_tmp" "$backup_dir/latest" || fail "cannot update $backup_dir/latest (the dump $name is complete)"
	latest_tmp=
	sync_path "$backup_dir"
	log "wrote $name ($(file_size "$backup_dir/$name") bytes) to $backup_dir in $((SECONDS - started))s; latest -> $name"
else
	log "wrote $name ($(file_size "$backup_dir/$name") bytes) to $backup_dir in $((SECONDS - started))s; kept aside, latest unchanged: $aside"
fi

# Retention: the newest KEEP_BACKUPS dumps stay, and so does the one latest
# names, whatever its age.
if [[ -n $keep ]]; then
	protected=
	[[ ! -e $backup_dir/latest ]] || IFS= read -r protected <"$backup_dir/latest" || true
	shopt -s nullglob
	dumps=("$backup_dir"/*.sql.gz)
	# Newest first; the names are the scripts' own, without new lines.
	((${#dumps[@]} <= keep)) || mapfile -t dumps < <(ls -1t -- "${dumps[@]}")
	for ((i = keep; i < ${#dumps[@]}; i++)); do
		old=${dumps[i]##*/}
		[[ $old != "$name" && $old != "$protected" ]] || continue
		rm -f -- "${dumps[i]}" && log "removed $old: KEEP_BACKUPS=$keep"
	done
	sync_path "$backup_dir"
fi

if [[ -z $aside ]]; then
	result "backed-up $name$(sizes "$backup_dir" "$backup_dir/$name")"
else
	result "backed-up-aside $name$(sizes "$backup_dir" "$backup_dir/$name")"
fi
