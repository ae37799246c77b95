#!/usr/bin/env bash
# password.sh: change the password of a MySQL user (root by default) on
# both its '%' and 'localhost' accounts, idempotently. The contract
# (environment, termination message) is in doc.go beside this file; the
# operator runs this text with bash -c in the MySQL image, for its client
# tools.
set -euo pipefail
umask 077

readonly self=password.sh

# --- common.sh ---

cleanup() { :; }

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
