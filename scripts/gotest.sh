#!/usr/bin/env bash
# gotest.sh ARGS...: go test -v ARGS in the current directory, printing as
# they end what a plain go test prints of a run that passes (each package's
# ok line) and, for each test and its first level of subtests (each lab of
# TestLabs), its result and how long it took, which a plain go test keeps to
# itself: where make test's time goes. A run that fails then prints its
# whole output, every test's log included.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
go test -v "$@" 2>&1 | tee "$log" |
	grep --line-buffered -E '^( {4})?--- (PASS|SKIP|FAIL): |^(ok|FAIL|PASS)([[:space:]]|$)|^\?'
rc=${PIPESTATUS[0]}
if [ "$rc" != 0 ]; then
	echo "gotest.sh: go test -v $* failed ($rc); its whole output:"
	cat "$log"
fi
exit "$rc"
