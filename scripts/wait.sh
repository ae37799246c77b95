#!/usr/bin/env bash
# Waiting and process helpers shared by the scripts that source this file
# (cluster.sh, node.sh, olm.sh, build-tools.sh, run.sh), which define say, and
# die for wait_until, first.

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

# progress WHAT COMMAND...: runs COMMAND, which may say nothing for minutes
# (a first go build), and says every 30 s that WHAT is still going; returns
# COMMAND's status. $progressing holds its pid meanwhile, for a trap that
# stops it with the script (on Ctrl-C too).
progressing=
progress() {
	local what=$1 start=$SECONDS next=$((SECONDS + 30)) status=0
	shift
	"$@" &
	progressing=$!
	while kill -0 "$progressing" 2>/dev/null; do
		if [ $SECONDS -ge $next ]; then
			say "still $what, $((SECONDS - start))s so far"
			next=$((SECONDS + 30))
		fi
		sleep 1
	done
	wait "$progressing" || status=$?
	progressing=
	return $status
}

# alive PIDFILE NAME: the process of PIDFILE runs and is NAME (node.sh's
# containerd, kubelet and kube-proxy, olm.sh's registry).
alive() {
	local pid
	pid=$(cat "$1" 2>/dev/null) || return 1
	grep -q "$2" "/proc/$pid/cmdline" 2>/dev/null
}
