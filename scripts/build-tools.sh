#!/usr/bin/env bash
# Builds, from Go modules only, every binary the project runs: the Kubernetes
# control plane and kubectl, the real node's kubelet, kube-proxy and CoreDNS, kubeadm, etcd,
# kwok/kwokctl, controller-gen, golangci-lint, actionlint and FerretDB (the kind node's
# mongo stand-in). Versions live in scripts/tools/<name>/go.mod, checksums in
# the go.sum beside it. A tool is rebuilt only when its module files or its
# build flags change, so second runs take well under a second; a fresh clone
# copies what another clone built with the same Go, kept in
# ~/.cache/workshop-tools ($WORKSHOP_TOOLS_CACHE).
#
# usage: scripts/build-tools.sh [kubernetes|kubernetes-node|kubectl|coredns|etcd|etcd-3.2|etcd-3.3|etcd-3.5|kwok|controller-gen|golangci-lint|actionlint|cyclonedx-gomod|helm|kind|kubebuilder|olm|local-provisioner|ferretdb]...
#        scripts/build-tools.sh --binaries TOOL   prints the binaries TOOL builds into bin/
# With no argument it builds all but kubernetes-node, coredns and ferretdb, which only
# the local cluster's real node and the kind node image need (scripts/node.sh
# and scripts/images.sh build them), kind and kubectl alone (a few minutes, not
# the control plane's twelve), which only kind users without them need,
# kubebuilder, which only lab 10 needs, cyclonedx-gomod, which only make
# release needs (an SBOM of each operator binary), helm, which only
# tests/deploy needs (the charts installed as an admin does), etcd-3.2, etcd-3.3 and etcd-3.5
# (etcd-3.2.13, the workshops' release, etcd-3.3.27 and etcd-3.5.21, with
# their etcdctl), which only the etcd operator's membership tests need,
# olm, which only make olm-up needs, and the project's own local-provisioner
# (scripts/cluster.sh and the kind node image).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${BIN:-$root/bin}
mkdir -p "$bin"
# Built tools are also kept here, for the next clone of the repository.
cache=${WORKSHOP_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/workshop-tools}

say() { echo "build-tools: $*" >&2; }
# shellcheck source=scripts/wait.sh
. "$root/scripts/wait.sh"
# shellcheck source=scripts/toolbox.sh
. "$root/scripts/toolbox.sh"

# The binaries a tool produces.
binaries() {
	case $1 in
	kubernetes) echo kube-apiserver kube-controller-manager kube-scheduler kubectl ;;
	kubernetes-node) echo kubelet kube-proxy kubeadm ;;
	kubectl) echo kubectl ;;
	etcd) echo etcd etcdctl ;;
	etcd-3.2) echo etcd-3.2.13 etcdctl-3.2.13 ;;
	etcd-3.3) echo etcd-3.3.27 etcdctl-3.3.27 ;;
	etcd-3.5) echo etcd-3.5.21 etcdctl-3.5.21 etcdutl-3.5.21 ;;
	kwok) echo kwok kwokctl ;;
	coredns) echo coredns ;;
	controller-gen) echo controller-gen ;;
	golangci-lint) echo golangci-lint ;;
	actionlint) echo actionlint ;;
	cyclonedx-gomod) echo cyclonedx-gomod ;;
	helm) echo helm ;;
	kind) echo kind ;;
	kubebuilder) echo kubebuilder ;;
	olm) echo olm catalog cpb ;;
	local-provisioner) echo local-provisioner ;;
	ferretdb) echo ferretdb ;;
	*) say "unknown tool '$1' (see scripts/tools/)"; return 1 ;;
	esac
}

# module_dir is the tool module a tool builds from: the node's binaries come
# from the control plane's module, so both are always the same release.
module_dir() {
	case $1 in
	kubernetes-node | kubectl) echo "$root/scripts/tools/kubernetes" ;;
	local-provisioner) echo "$root/scripts/local-provisioner" ;;
	*) echo "$root/scripts/tools/$1" ;;
	esac
}

# packages are what go build builds: the module's whole tool directive, but
# for the Kubernetes module, whose one directive serves two tools, and for
# CoreDNS and the local provisioner, built from their module's own main package.
packages() {
	local b
	case $1 in
	kubernetes | kubernetes-node | kubectl) for b in $(binaries "$1"); do echo "k8s.io/kubernetes/cmd/$b"; done ;;
	coredns | local-provisioner) echo . ;;
	*) echo tool ;;
	esac
}

# Built without ldflags, Kubernetes binaries say v0.0.0, which kubectl and kwok
# reject; stamp the release the go.mod pins.
ldflags() {
	case $1 in kubernetes | kubernetes-node | kubectl) ;; *) return 0 ;; esac
	local v major minor pkg flags=""
	v=$(pinned_version "$root/scripts/tools/kubernetes" k8s.io/kubernetes)
	major=${v#v}; major=${major%%.*}
	minor=${v#v*.}; minor=${minor%%.*}
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	echo "$flags"
}

# patched_modfile DIR OUT MODULE FIX writes OUT/go.mod, the go.mod to build
# with: DIR's, with a replace directive for a copy of MODULE's pinned version
# (in OUT/src) that FIX mends (FIX runs in the copy, given the version). go
# build -overlay may not replace a file of the module cache.
patched_modfile() {
	local dir=$1 out=$2 module=$3 fix=$4 mod v
	mod=$(pinned_source "$dir" "$module")
	v=$(pinned_version "$dir" "$module")
	[ ! -d "$out" ] || chmod -R u+w "$out"
	rm -rf "$out"
	mkdir -p "$out"
	cp -R "$mod" "$out/src"
	chmod -R u+w "$out/src"
	# A module of before go.mod (ugorji's of 2017) needs one to be replaced.
	[ -f "$out/src/go.mod" ] || echo "module $module" >"$out/src/go.mod"
	(cd "$out/src" && "$fix" "$v") || { say "cannot mend $module $v for $tool"; return 1; }
	{ cat "$dir/go.mod"; echo "replace $module => $out/src"; } >"$out/go.mod"
	cp "$dir/go.sum" "$out/go.sum"
}

# FerretDB's module lacks the build/version/version.txt its release process
# writes: FerretDB panics at start without it.
ferretdb_fix() {
	[ -d build/version ] && echo "$1" >build/version/version.txt
}

# etcd 3.2's codec (ugorji's, of 2017) builds a base64 alphabet with "_"
# twice, which Go 1.22 and later refuse at init; only its code generator
# uses that alphabet.
ugorji_fix() {
	grep -q '0123456789__")' codec/gen.go && sed -i 's/0123456789__")/0123456789_.")/' codec/gen.go
}

# sources prints the Go files of a tool module that has its own main package.
sources() {
	local f
	for f in "$1"/*.go; do
		if [ -f "$f" ]; then cat "$f"; fi
	done
}

build() {
	local tool=$1 dir stamp want b flags missing=0
	dir=$(module_dir "$tool")
	flags="-s -w $(ldflags "$tool")"
	want=$( (cat "$dir/go.mod" "$dir/go.sum"; sources "$dir"; echo "$flags") | sha256sum | cut -d' ' -f1)
	stamp="$bin/.stamp-$tool"
	for b in $(binaries "$tool"); do [ -x "$bin/$b" ] || missing=1; done
	if [ $missing = 0 ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
		return 0
	fi
	# The same sources, flags and Go give the same binaries (-trimpath): a
	# clone's build takes another clone's from the cache.
	local kept
	kept=$cache/$tool-$(printf '%s %s\n' "$want" "$(go env GOVERSION GOOS GOARCH | paste -sd' ')" | sha256sum | cut -c1-16)
	if [ -f "$kept/.complete" ]; then
		for b in $(binaries "$tool"); do cp -f "$kept/$b" "$bin/.$b.copy" && mv -f "$bin/.$b.copy" "$bin/$b"; done
		echo "$want" >"$stamp"
		say "$tool from the cache ($kept)"
		return 0
	fi
	local hint=""
	case $tool in kubernetes) hint=" (the first build takes about 12 minutes on 2 cores)" ;; esac
	say "building $(binaries "$tool") into $bin$hint"
	local start=$SECONDS modfile=$dir/go.mod out=$bin/
	case $tool in
	ferretdb)
		modfile=$bin/.ferretdb-build/go.mod
		patched_modfile "$dir" "${modfile%/*}" github.com/FerretDB/FerretDB ferretdb_fix
		;;
	etcd-3.*)
		out=$bin/.$tool-build/out/
		if [ "$tool" = etcd-3.2 ]; then
			modfile=$bin/.$tool-build/go.mod
			patched_modfile "$dir" "${modfile%/*}" github.com/ugorji/go ugorji_fix
		fi
		;;
	esac
	# go build -o DIR writes one binary per main package.
	# shellcheck disable=SC2046 # one word per package
	progress "building $tool" env -C "$dir" GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 \
		go build -trimpath -modfile="$modfile" -ldflags "$flags" -o "$out" $(packages "$tool")
	# go names a binary after its package path: etcd's server is ".../server/v3".
	# An older etcd release's binaries are named after it, beside today's.
	case $tool in
	etcd) mv -f "$bin/server" "$bin/etcd" ;;
	etcd-3.*)
		local v n
		v=$(binaries "$tool"); v=${v%% *}; v=${v#etcd-}
		for b in "$out"*; do
			n=${b##*/}
			[ "$n" != server ] || n=etcd
			mv -f "$b" "$bin/$n-$v"
		done
		;;
	esac
	echo "$want" >"$stamp"
	keep "$tool" "$kept"
	say "$tool ready in $((SECONDS - start))s"
}

# keep TOOL DIR copies TOOL's binaries from bin/ into the cache directory
# DIR, whole or not at all (a copy that stops halfway leaves no .complete).
keep() {
	local b tmp
	mkdir -p "$cache"
	tmp=$(mktemp -d "$cache/.copy-XXXXXX")
	for b in $(binaries "$1"); do cp "$bin/$b" "$tmp/$b"; done
	touch "$tmp/.complete"
	mv -T "$tmp" "$2" 2>/dev/null || rm -rf "$tmp"
}

if [ "${1:-}" = --binaries ]; then
	binaries "${2:?usage: scripts/build-tools.sh --binaries TOOL}"
	exit
fi

# A build runs in the background (for its progress lines): stop it with the
# script, on Ctrl-C too.
trap '[ -z "$progressing" ] || kill "$progressing" 2>/dev/null' EXIT

# Two runs side by side (make test's local and kind parts) take turns: they
# build into the same bin/.
exec 9>"$bin/.build-tools.lock"
flock 9

tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(kubernetes etcd kwok controller-gen golangci-lint actionlint)
for t in "${tools[@]}"; do
	binaries "$t" >/dev/null
	build "$t"
done
