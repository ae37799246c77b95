#!/usr/bin/env bash
# Tests scripts/lanes.sh's sharing of $LANES_ALSO between lanes, with a make
# that only notes what it was asked to make: run by make test-unit.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "lanes_test: $*" >&2; exit 1; }

# The stand-in for make: notes its target, takes a moment, and fails for
# the target named "broken".
cat >"$tmp/make" <<'MAKE'
#!/usr/bin/env bash
t=${*: -1}
echo "$t" >>"$LOG"
sleep 0.2
[ "$t" != broken ]
MAKE
chmod +x "$tmp/make"
export MAKE=$tmp/make BIN=$tmp/bin LOG=$tmp/made

# Two lanes side by side make every target once between them, in order.
mkdir -p "$BIN/lanes-also"
export LANES_ALSO="t1 t2 t3 t4 t5"
"$root/scripts/lanes.sh" also first >"$tmp/first" &
"$root/scripts/lanes.sh" also second >"$tmp/second"
wait $!
[ "$(sort "$LOG" | tr '\n' ' ')" = "t1 t2 t3 t4 t5 " ] || fail "made $(tr '\n' ' ' <"$LOG"), want t1 to t5 once each"
for t in $LANES_ALSO; do
	[ "$(grep -c "^first: $t ended\|^second: $t ended" "$tmp/first" "$tmp/second" | awk -F: '{s+=$2} END {print s}')" = 1 ] ||
		fail "$t: not said ended by exactly one lane"
done

# A target that fails fails its lane, and the targets after it still run.
rm -rf "$BIN/lanes-also" "$LOG"
mkdir -p "$BIN/lanes-also"
if LANES_ALSO="broken t6" "$root/scripts/lanes.sh" also only >/dev/null; then fail "a failed target did not fail the lane"; fi
[ "$(tr '\n' ' ' <"$LOG")" = "broken t6 " ] || fail "made $(tr '\n' ' ' <"$LOG"), want broken then t6"

# Without the directory the lanes take targets in, nothing is made: a lane
# that cannot tell which targets are taken must not make them twice.
rm -rf "$BIN/lanes-also" "$LOG"
if LANES_ALSO="t7" "$root/scripts/lanes.sh" also only 2>/dev/null; then fail "a lane without $BIN/lanes-also succeeded"; fi
[ ! -e "$LOG" ] || fail "made $(cat "$LOG") without $BIN/lanes-also"
echo "lanes_test: ok"
