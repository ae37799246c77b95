#!/usr/bin/env bash
# verify.sh: check, after backup.sh, that the dump it reported is on the
# backup volume as it reported it. The contract (environment, files,
# termination message) is in doc.go beside this file; the operator runs
# this text with bash -c in the MySQL image, from a second Job, so that
# the backup counts only once the volume itself shows the dump.
set -euo pipefail
umask 077

readonly self=verify.sh

# --- common.sh ---

cleanup() { :; }

require BACKUP_DIR "set it to the backup volume's mount path"
backup_dir=${BACKUP_DIR:-}
[[ -d $backup_dir ]] || fail "BACKUP_DIR=$backup_dir is not a directory: mount the backup volume there"
require VERIFY_DUMP "set it to the dump's file name that backup.sh reported"
dump=${VERIFY_DUMP:-}
[[ $dump == *.sql.gz && $dump != */* && $dump != .* ]] || fail "VERIFY_DUMP=$dump is not a dump file name"
size_expected=${VERIFY_SIZE:-}
[[ -z $size_expected || $size_expected =~ ^[0-9]{1,19}$ ]] || fail "VERIFY_SIZE=$size_expected is not a size in bytes"
latest_expected=${VERIFY_LATEST:-}
[[ -z $latest_expected || $latest_expected == yes ]] || fail "VERIFY_LATEST=$latest_expected: set it to yes, or leave it unset"
workdir=$(mktemp -d) || fail "cannot create a temporary directory (is TMPDIR, or /tmp, writable?)"

file=$backup_dir/$dump
[[ -f $file ]] || fail "$dump, which the backup reported, is not on the backup volume"
size=$(file_size "$file")
if [[ -n $size_expected && $size != "$size_expected" ]]; then
	fail "$dump has $size bytes on the backup volume, where the backup reported $size_expected"
fi
check_dump "$file" "$dump on the backup volume"
if [[ -n $latest_expected ]]; then
	current=
	[[ ! -e $backup_dir/latest ]] || IFS= read -r current <"$backup_dir/latest" || true
	[[ $current == "$dump" ]] || fail "latest names '${current:-nothing}', not $dump, which the backup reported it made latest"
fi
log "$dump is on the backup volume: $size bytes, a whole dump${latest_expected:+, named by latest}"
result "verified $dump$(sizes "$backup_dir" "$file")"
