#!/usr/bin/env bash
# Starts a Docker daemon for kind (scripts/kind.sh) on a machine that has
# Debian's docker.io but runs no daemon, as the project's test machines:
# .ci/run starts one before make test. The daemon keeps its images and
# containers in a root of its own (/var/lib/workshop-docker) and writes no
# iptables rules (--iptables=false: the machine's firewall is left alone;
# the machine reaches kind's nodes on Docker's bridge, and kind's API server
# through docker-proxy on the loopback). It listens on Docker's usual socket,
# so the docker client and kind find it.
#
# usage: scripts/dockerd.sh start|stop
#   start  start the daemon unless one answers `docker info`; wait for it
#   stop   stop the daemon start started (its containers stop with it)
# Its log is /var/log/workshop-dockerd.log.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pidfile=/run/workshop-dockerd.pid
log=/var/log/workshop-dockerd.log

say() { echo "dockerd.sh: $*" >&2; }
die() { say "$*"; exit 1; }
# shellcheck source=scripts/wait.sh
. "$root/scripts/wait.sh"

case ${1:-} in
start)
	if docker info >/dev/null 2>&1; then
		say "a Docker daemon answers already"
		exit 0
	fi
	command -v dockerd >/dev/null || die "dockerd is missing: apt-get install docker.io"
	[ "$(id -u)" = 0 ] || die "starting dockerd needs root"
	setsid nohup dockerd --data-root /var/lib/workshop-docker --exec-root /run/workshop-docker \
		--iptables=false --pidfile "$pidfile" </dev/null >>"$log" 2>&1 &
	if ! poll 60 docker info; then
		tail -n 20 "$log" >&2
		die "dockerd did not answer within 60s (log above; full log $log)"
	fi
	say "started dockerd (pid $(cat "$pidfile"), log $log)"
	;;
stop)
	if [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null; then
		poll 60 bash -c "! kill -0 $(cat "$pidfile") 2>/dev/null" || die "dockerd did not stop within 60s"
		say "stopped dockerd"
	fi
	;;
*)
	sed -n '/^# usage:/,/^# Its log/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
	;;
esac
