#!/usr/bin/env bash
# Fails when a tracked file is a build output: a binary (as git sees it: a
# NUL byte in its first 8000 bytes) other than the pictures listed below, or
# a file larger than the limit. A 46 MB binary once landed in git this way.
#
# usage: scripts/check-tree.sh [LIMIT_BYTES]   (default 1 MiB)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

limit=${1:-1048576}
empty_tree=$(git hash-object -t tree /dev/null)
bad=0
# numstat prints "-	-	PATH" for a file git finds binary.
while IFS=$'\t' read -r added _ path; do
	[ "$added" = - ] || continue
	case $path in
	*.png | *.jpg | *.gif) continue ;; # pictures of the docs and benchmark charts
	esac
	echo "check-tree: $path is binary: build outputs stay out of git (add it to .gitignore)" >&2
	bad=1
done < <(git diff --cached --numstat "$empty_tree")
while IFS= read -r -d '' path; do
	[ -f "$path" ] || continue
	size=$(stat -c %s "$path")
	if [ "$size" -gt "$limit" ]; then
		echo "check-tree: $path is $size bytes, over the limit of $limit" >&2
		bad=1
	fi
done < <(git ls-files -z)
[ $bad = 0 ] && echo "check-tree: no binary or oversized file is tracked"
