#!/usr/bin/env bash
# Builds the images OLM installs the operators from, without a Docker daemon:
# each operator's image (scripts/release.sh image: its static binary alone,
# run as the nonroot user 65532, no shell; an OCI archive of this machine's
# platform), each bundle's image (catalog/bundles/<package>/<version>,
# labelled as its metadata/annotations.yaml says) and the catalog image (opm,
# built from the operator-registry module catalog/gen pins, serving
# catalog/index). scripts/images/mkimage writes each as an archive (a docker
# archive, or an OCI one for the operators), which `ctr images import` and
# `docker load` read.
#
# Images are named in REGISTRY (ghcr.io/operator-workshops), as the bundles and
# the catalog name them. An operator has an image for every release of its
# package the catalog lists: a release catalog/RELEASES records is built from
# its commit, checked out in a worktree, so that an upgrade crosses the code
# that was released; the current one (catalog/VERSION) from the tree.
# The catalog image also holds grpc_health_probe, which OLM's catalog pods
# are probed with.
#
# usage: scripts/olm-images.sh build|import ADDRESS|push [HOST:PORT]|list
#   build        write the archives into $OLM_IMAGES_DIR (bin/images)
#   import ADDR  build, then import them into the containerd at socket ADDR
#   push [HOST]  build, then push them to the registry their names say
#                (docker login first), or to the registry at HOST:PORT
#                under the same repository paths (a mirror; plain HTTP on
#                the loopback)
#   list         print each archive and its names
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OLM_IMAGES_DIR:-$root/bin/images}
registry=${REGISTRY:-ghcr.io/operator-workshops}
work=$out/.work
nonroot=65532:65532

. "$root/scripts/kept-build.sh"

say() { echo "olm-images.sh: $*" >&2; }
die() { say "$*"; exit 1; }

operators=(database mysql-backup etcd-cluster gordon)

# bundles prints each bundle directory of the catalog, relative to catalog/.
bundles() { (cd "$root/catalog" && find bundles -mindepth 2 -maxdepth 2 -type d | sort); }

# releases PACKAGE prints the releases of PACKAGE the catalog holds.
releases() {
	local d v
	for d in "$root"/catalog/bundles/"$1"/*/; do
		v=$(basename "$d")
		echo "${v%%-*}"
	done | sort -u
}

# program NAME runs scripts/images' program NAME (mkimage, push), built
# (from Go's cache after the first time) so that it is never stale.
program() {
	local p=$1
	shift
	images_program "$p" "$work/$p"
	"$work/$p" "$@"
}

mkimage() { program mkimage "$@"; }

# build_operator builds the operator's images for this machine's platform,
# as make release builds them for every platform: each released version's
# from the commit it was released from (OP-operator-vVERSION.tar), the
# current release's from the tree (OP-operator.tar).
build_operator() {
	local op=$1 tags=() v commit platform
	platform=linux/$(go env GOARCH)
	for v in $(releases "$op"); do
		commit=$("$root/scripts/release.sh" released "$v")
		if [ -z "$commit" ]; then
			tags+=("$registry/$op-operator:v$v")
			continue
		fi
		released_image "$op" "$v" "$commit" "$platform"
	done
	[ ${#tags[@]} -gt 0 ] || die "the catalog has no bundle of $op at $(cat "$root/catalog/VERSION")"
	PLATFORMS=$platform "$root/scripts/release.sh" image "$op" "$out/$op-operator.tar" "${tags[@]}" >/dev/null
}

# digest FILE|DIR... prints one hash of the files named and of those under
# the directories named: their paths in the tree and their contents.
digest() {
	find "$@" -type f -print0 | sort -z | xargs -0 sha256sum | sed "s|$root/||" | sha256sum | cut -d' ' -f1
}

# tools is what every kept image is built with: Go and scripts/images'
# programs (mkimage), hashed once by build_all.
tools=

# Kept images, as scripts/images.sh keeps its archives: ARCHIVE.stamp holds
# what ARCHIVE was built from, and an archive whose stamp says the same as a
# new build's would is not built again. kept ARCHIVE WANT says whether
# ARCHIVE was built from WANT; keep ARCHIVE WANT COMMAND... removes its
# stamp, so that a build that fails leaves none to trust, runs COMMAND and
# writes the stamp once COMMAND has built ARCHIVE.
kept() { [ -f "$1" ] && [ "$(cat "$1.stamp" 2>/dev/null)" = "$2" ]; }
keep() {
	local archive=$1 want=$2
	shift 2
	rm -f "$archive.stamp"
	"$@"
	echo "$want" >"$archive.stamp"
}

# released_image OP VERSION COMMIT PLATFORM builds OP's image of release
# VERSION from COMMIT, unless the archive an earlier build left was built
# from the same commit, with the same Go, release.sh and scripts/images,
# for the same platform and name: that build's output is the same
# (release.sh image is reproducible), and each OLM install builds the set
# anew, so released images are built once, not on every install.
released_image() {
	local op=$1 v=$2 commit=$3 platform=$4 archive want
	archive=$out/$op-operator-v$v.tar
	want="$commit $platform $registry/$op-operator:v$v $tools $(digest "$root/scripts/release.sh")"
	if kept "$archive" "$want"; then
		say "$op-operator v$v: built earlier from $commit (${archive#"$root"/})"
		return
	fi
	keep "$archive" "$want" released_build "$op" "$v" "$platform" "$archive"
}

# released_build OP VERSION PLATFORM ARCHIVE builds OP's image of release
# VERSION into ARCHIVE, from a worktree of its commit. The worktree is made
# first, on a line of its own: a failure there stops the build, where a
# TREE= prefix would hide it and build the current tree under the released
# name, then keep it.
released_build() {
	local tree
	tree=$("$root/scripts/release.sh" worktree "$2")
	IMAGE_VERSION=$2 PLATFORMS=$3 TREE=$tree "$root/scripts/release.sh" image "$1" "$4" "$registry/$1-operator:v$2" >/dev/null
}

# build_bundle DIR builds the image of the catalog's bundle DIR (relative to
# catalog/), named as the catalog names it.
build_bundle() { "$root/scripts/release.sh" bundle-image "$root/catalog/$1" "$out"; }

# build_catalog builds the catalog image: opm and grpc_health_probe, built
# from the modules catalog/gen pins, serving catalog/index. It is kept while
# those, this script, Go and scripts/images are the same (its stamp), as a
# released image is: its 60 MB of binaries take a quarter of a minute to
# build and pack, on every OLM install.
build_catalog() {
	local archive=$out/catalog.tar version want start=$SECONDS
	version=$(cat "$root/catalog/VERSION")
	want="$registry/catalog:v$version linux/$(go env GOARCH) $tools $(digest "$root/catalog/index" \
		"$root/catalog/gen/go.mod" "$root/catalog/gen/go.sum" "$root/scripts/olm-images.sh")"
	if kept "$archive" "$want"; then
		say "catalog: built earlier from the same catalog/index, opm and scripts (${archive#"$root"/})"
		return
	fi
	keep "$archive" "$want" catalog_build "$archive" "$registry/catalog:v$version"
	say "built catalog in $((SECONDS - start))s"
}

catalog_build() {
	local stage=$work/stage/catalog
	rm -rf "$stage"
	mkdir -p "$stage/bin" "$stage/tmp"
	chmod 1777 "$stage/tmp"
	GOWORK=off CGO_ENABLED=0 kept_build "$root/catalog/gen" opm "$stage/bin/opm" \
		-tags containers_image_openpgp -trimpath -ldflags "-s -w" github.com/operator-framework/operator-registry/cmd/opm
	GOWORK=off CGO_ENABLED=0 kept_build "$root/catalog/gen" grpc_health_probe "$stage/bin/grpc_health_probe" \
		-trimpath -ldflags "-s -w" github.com/grpc-ecosystem/grpc-health-probe
	cp -r "$root/catalog/index" "$stage/configs"
	# The serving cache, built now as catalog.Dockerfile's RUN does: opm
	# serve --cache-dir refuses to start on a cache that is not there. opm
	# opens it read-write, as whatever user the pod runs as (OLM: 1001).
	"$stage/bin/opm" serve "$stage/configs" --cache-dir="$stage/tmp/cache" --cache-only 2>/dev/null
	chmod -R a+rwX "$stage/tmp/cache"
	mkimage --out "$1" --layer "$stage" --user "$nonroot" \
		--entrypoint /bin/opm --cmd serve --cmd /configs --cmd --cache-dir=/tmp/cache --expose 50051/tcp \
		--label operators.operatorframework.io.index.configs.v1=/configs --tag "$2"
}

build_all() {
	local op dir
	mkdir -p "$out" "$work"
	tools=$({ go version && digest "$root/scripts/images"; } | sha256sum | cut -d' ' -f1)
	for op in "${operators[@]}"; do build_operator "$op"; done
	for dir in $(bundles); do build_bundle "$dir"; done
	build_catalog
}

case ${1:-} in
build) build_all ;;
import)
	[ -n "${2:-}" ] || die "usage: scripts/olm-images.sh import ADDRESS"
	build_all
	for f in "$out"/*.tar; do ctr --address "$2" -n k8s.io images import "$f" >/dev/null; done
	say "imported $(find "$out" -maxdepth 1 -name '*.tar' | wc -l) images"
	;;
push)
	build_all
	mirror=()
	# A mirror is the project's own registry (scripts/olm.sh), on plain HTTP.
	[ -z "${2:-}" ] || mirror=(--mirror "$2" --insecure)
	program push "${mirror[@]}" "$out"/*.tar
	;;
list) for f in "$out"/*.tar; do echo "$f"; done ;;
*)
	sed -n '/^# usage:/,/^set -euo/{/^set/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
	;;
esac
