#!/usr/bin/env bash
# make test-clusters' two lanes, side by side: one has the machine's real
# node (tests/deploy, tests/olm, tests/realnode, tests/faults, the labs that
# need it, the README), the other none (the labs on kind, the other labs on
# fake nodes, tests/deploy on kind, tests/e2e). They share no cluster and no
# node; the steps that run operators on this machine's own ports, as a
# learner does (the labs, the README), take turns
# (tests/internal/cluster.LockHost). After its suites, each lane takes the
# targets of $LANES_ALSO (make test: the race detector's run, the
# benchmark's smoke run, the unit tests, fuzzing) one at a time, in order,
# each taken by whichever lane is free first, so that both lanes end
# together whichever ends its suites first. Each lane says when each of its
# steps ended; the second lane's output goes to $BIN/test-lane.log, printed
# whole when it ends; what the failed tests of both printed last
# (scripts/gotest.sh) comes again at the end, where CI's summary shows it,
# with what the run cost the machine's CPUs (scripts/cpu-work.sh).
#
# usage: scripts/lanes.sh clusters    both lanes (make test-clusters)
#        scripts/lanes.sh lane        the second lane alone (make test-lane)
#        scripts/lanes.sh also LANE   take the targets of $LANES_ALSO no lane
#                                     has taken yet, as LANE
# From make: $MAKE, $BIN, $LANES_ALSO, $FAULTS_SEEDS, $LABS_REAL_NODE and
# $LABS_FAKE_NODES (TestLabs' subtests for each lane), $E2E_KIND.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${BIN:-$root/bin}
make=${MAKE:-make}
also_dir=$bin/lanes-also
gotest=$root/scripts/gotest.sh
start=$(date +%s)

# lap LANE STEP says that LANE's STEP ended, with the seconds since the
# lane started.
lap() { echo "$1: $2 ended after $(($(date +%s) - start))s"; }

# also LANE runs each target of $LANES_ALSO that no lane has taken yet: a
# lane takes a target by making its directory in $also_dir, which only one
# lane can. It fails when one of them failed.
also() {
	local lane=$1 t rc=0
	for t in ${LANES_ALSO:-}; do
		if ! mkdir "$also_dir/$t" 2>/dev/null; then
			[ -d "$also_dir/$t" ] && continue
			echo "$lane: cannot take $t: no $also_dir" >&2
			rc=1
			continue
		fi
		"$make" --no-print-directory -k "$t" || rc=1
		lap "$lane" "$t"
	done
	return $rc
}

# lane runs the second lane: the labs on kind (make test-kind-part's), the
# labs on fake nodes, tests/deploy on kind, tests/e2e.
lane() {
	local rc=0 kind=
	if docker info >/dev/null 2>&1; then
		kind=1
		"$make" --no-print-directory test-kind KIND_SUITES= KIND_LABS='0[457]' || rc=1
		lap test-lane "the labs on kind"
	elif [ "${E2E_KIND:-}" = required ]; then
		echo "test-lane: no Docker daemon answers 'docker info', and E2E_KIND=required: start one (scripts/dockerd.sh start)" >&2
		rc=1
	else
		echo "test-lane: the kind part SKIPPED, no Docker daemon answers 'docker info' (scripts/dockerd.sh start starts one; E2E_KIND=required makes this a failure)" >&2
	fi
	(cd "$root/tests" && "$gotest" -count=1 -timeout 30m -run "TestLabs/(${LABS_FAKE_NODES:-})" ./labs/) || rc=1
	lap test-lane "the labs on fake nodes"
	if [ -n "$kind" ]; then
		(cd "$root/tests" && E2E_PROVIDER=kind "$gotest" -count=1 -p 1 -timeout 40m ./deploy/) || rc=1
		lap test-lane "tests/deploy on kind"
	fi
	(cd "$root/tests" && "$gotest" -count=1 -timeout 30m ./e2e/) || rc=1
	lap test-lane tests/e2e
	also test-lane || rc=1
	return $rc
}

# clusters runs the first lane here and the second beside it.
clusters() {
	local cpu rc=0 other pid
	cpu=$("$root/scripts/cpu-work.sh")
	rm -rf "$bin/test-failures" "$also_dir"
	mkdir -p "$also_dir"
	export GOTEST_FAILURES=$bin/test-failures
	{ "$0" lane >"$bin/test-lane.log" 2>&1 && echo 0 >"$bin/test-lane.rc" || echo $? >"$bin/test-lane.rc"; } &
	pid=$!
	trap 'kill $pid 2>/dev/null || true' INT TERM
	cd "$root/tests"
	"$gotest" -count=1 -p 1 -timeout 50m ./deploy/ ./olm/ ./realnode/ ./internal/... || rc=1
	lap test-clusters "tests/deploy tests/olm tests/realnode"
	FAULTS_SEEDS=${FAULTS_SEEDS:-1,2} "$gotest" -count=1 -timeout 30m ./faults/ || rc=1
	lap test-clusters "tests/faults seeds ${FAULTS_SEEDS:-1,2}"
	"$gotest" -count=1 -timeout 60m -run "TestLabs/(${LABS_REAL_NODE:-})" ./labs/ || rc=1
	lap test-clusters "the labs on the real node"
	"$gotest" -count=1 -timeout 20m ./readme/ || rc=1
	lap test-clusters "the README"
	cd "$root"
	also test-clusters || rc=1
	echo "test-clusters: the real node's lane ended ($rc) after $(($(date +%s) - start))s; waiting for the other"
	wait $pid || true
	echo "test-clusters: the other lane printed ($bin/test-lane.log):"
	cat "$bin/test-lane.log"
	other=$(cat "$bin/test-lane.rc")
	if [ -n "$(ls "$bin/test-failures" 2>/dev/null)" ]; then
		echo "test-clusters: what the failed tests printed last, again:"
		cat "$bin"/test-failures/*
	fi
	echo "test-clusters: real node's lane $rc, other lane $other, after $(($(date +%s) - start))s"
	echo "test-clusters: the machine's CPUs: $("$root/scripts/cpu-work.sh" "$cpu")"
	[ "$rc" = 0 ] && [ "$other" = 0 ]
}

case ${1:-} in
clusters) clusters ;;
lane) lane ;;
also)
	[ $# -eq 2 ] || { echo "usage: scripts/lanes.sh also LANE" >&2; exit 2; }
	also "$2"
	;;
*)
	sed -n '18,24p' "$0" >&2
	exit 2
	;;
esac
