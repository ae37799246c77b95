#!/usr/bin/env bash
# Waiting helpers shared by cluster.sh and node.sh, which source this file
# and define say and die first.

# poll SECONDS COMMAND...: runs COMMAND every half second until it succeeds;
# fails after SECONDS.
poll() {
	local timeout=$1 start=$SECONDS
	shift
	until "$@" >/dev/null 2>&1; do
		[ $((SECONDS - start)) -lt "$timeout" ] || return 1
		sleep 0.5
	done
}

# wait_until DESCRIPTION SECONDS COMMAND...: polls COMMAND and says how long it took.
wait_until() {
	local what=$1 timeout=$2 start=$SECONDS
	shift 2
	poll "$timeout" "$@" || die "timed out after ${timeout}s waiting for $what"
	say "$what ($((SECONDS - start))s)"
}
