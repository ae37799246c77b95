#!/usr/bin/env bash
# Builds that stay between runs, shared by the scripts that source this file
# (release.sh, olm-images.sh, images.sh), which set $root first.

# kept_build DIR NAME COPY ARGS... runs go build -o KEPT ARGS in DIR and
# copies KEPT to COPY, the file the caller uses. KEPT, bin/kept-builds/NAME,
# stays between runs: go build does not link again a binary that is up to
# date there, where one built to a new path every run was linked every time
# (an operator's link is 4 CPU-seconds, opm's 10, and make test builds the
# same operator for every deploy and OLM install). Runs side by side take
# turns on KEPT's lock, so that none copies a binary another is writing;
# the copy is made beside COPY and renamed over it, so that a COPY being run
# is never written. NAME must say what differs between the builds made
# under it (a source tree, a platform), else they overwrite each other's
# binary every time.
kept_build() {
	local dir=$1 kept=${BIN:-$root/bin}/kept-builds/$2 copy=$3
	shift 3
	mkdir -p "${kept%/*}"
	(
		flock 9
		cd "$dir" && go build -o "$kept" "$@" && cp "$kept" "$copy.copy" && mv -f "$copy.copy" "$copy"
	) 9>"$kept.lock"
}

# images_program NAME COPY builds scripts/images' program NAME into COPY
# (kept_build): mkimage and push, which run here, and pause and gordon,
# which images hold, so static.
images_program() {
	GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 \
		kept_build "$root/scripts/images" "images-$1" "$2" -trimpath -ldflags "-s -w" "./$1"
}
