#!/usr/bin/env bash
# Answers to the questions several scripts ask, for the scripts that source
# this file (build-tools.sh, cluster.sh, deploy.sh, images.sh, kind.sh, node.sh,
# olm.sh, release.sh), which set $root first.

# The Go modules that scripts/tools pins: each scripts/tools/NAME/go.mod
# requires a module at the version the project builds and tests with.

# pinned_version DIR MODULE prints the version of MODULE that DIR's go.mod
# requires.
pinned_version() {
	(cd "$1" && GOWORK=off go list -m -f '{{.Version}}' "$2")
}

# pinned_source DIR MODULE downloads that version of MODULE, unless the
# module cache has it already, and prints its directory there.
pinned_source() {
	(cd "$1" && GOWORK=off go mod download -json "$2" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
}

# on_kind NAME reports whether kubectl's current context is the kind cluster
# NAME (make kind-up makes it current), rather than the local cluster NAME.
on_kind() {
	[ "$(kubectl config current-context 2>/dev/null)" = "kind-$1" ]
}

# cluster_script ARGS... sets what each script that acts on one cluster
# (cluster.sh, node.sh, olm.sh), run with ARGS, starts from: bin, the
# project's built tools, first on PATH; cmd, its first argument; name, its
# second, else $CLUSTER_NAME, else "workshop"; workdir and dir, where
# kwokctl keeps the cluster's files, pids and logs
# ($KWOK_WORKDIR/clusters/NAME, ~/.kwok by default), and so do these.
# shellcheck disable=SC2034 # set for the script that calls it
cluster_script() {
	bin=${BIN:-$root/bin}
	export PATH="$bin:$PATH"
	cmd=${1:-}
	name=${2:-${CLUSTER_NAME:-workshop}}
	workdir=${KWOK_WORKDIR:-$HOME/.kwok}
	dir=$workdir/clusters/$name
}
