#!/usr/bin/env bash
# gotest.sh ARGS...: go test -v ARGS in the current directory, printing as
# they end what a plain go test prints of a run that passes (each package's
# ok line) and, for each test and its first level of subtests (each lab of
# TestLabs), its result and how long it took, which a plain go test keeps to
# itself, and how long a lab waited for the host lock another lab held
# (tests/internal/cluster.LockHost): where make test's time goes. A run that
# fails then prints its whole output, every test's log included, and last
# the end of each failed test's own log, where it says why it failed. With
# GOTEST_FAILURES set to a directory, that end is also left there in a
# file, for make test-clusters to print again once both lanes are done.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
go test -v "$@" 2>&1 | tee "$log" |
	grep --line-buffered -E '^( {4})?--- (PASS|SKIP|FAIL): |^(ok|FAIL|PASS)([[:space:]]|$)|^\?|waited [0-9hms]+ for the host lock$'
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] && exit 0

# failed_ends prints the last lines of the log of each test that failed and
# has no failed subtest: the lines go test -v printed after its "=== RUN",
# "=== CONT" or "=== NAME" line, up to the next such line. A "--- FAIL:"
# line counts only for a test this run ran: a test's log may hold another
# go test's output (a lab's check of the learner's code, failing before the
# learner wrote it).
failed_ends() {
	awk -v keep=80 '
		/^=== RUN / { ran[$3] = 1 }
		/^=== (RUN|CONT|NAME) / { cur = $3; next }
		{ lines[cur, ++n[cur]] = $0 }
		match($0, /^ *--- FAIL: [^ ]+/) {
			f = substr($0, RSTART, RLENGTH)
			sub(/^ *--- FAIL: /, "", f)
			if (f in ran) failed[f] = 1
		}
		END {
			for (t in failed) {
				leaf = 1
				for (u in failed) if (index(u, t "/") == 1) leaf = 0
				if (!leaf) continue
				from = n[t] > keep ? n[t] - keep + 1 : 1
				printf "--- %s: the last %d lines of its log:\n", t, n[t] - from + 1
				for (i = from; i <= n[t]; i++) print lines[t, i]
			}
		}' "$log"
}

echo "gotest.sh: go test -v $* failed ($rc); its whole output:"
cat "$log"
ends=$(failed_ends)
[ -n "$ends" ] || ends=$(tail -n 50 "$log")
printf 'gotest.sh: go test -v %s in %s failed (%s); what the failed tests printed last:\n%s\n' "$*" "${PWD##*/}" "$rc" "$ends" |
	if [ -n "${GOTEST_FAILURES:-}" ] && mkdir -p "$GOTEST_FAILURES"; then
		tee "$(mktemp "$GOTEST_FAILURES/XXXXXX.log")"
	else
		cat
	fi
exit "$rc"
