#!/usr/bin/env bash
# Builds a release of the four operators, as a cluster admin installs it
# without OLM and without this repository's tools: for each operator
#
#   images/OP-operator.tar  its image: the static binary alone, run as the
#                           nonroot user 65532, for each of PLATFORMS, in one
#                           OCI image index tagged REGISTRY/OP-operator:vVERSION,
#                           with OCI labels (source, revision, version); an OCI
#                           archive, which `docker load`, `ctr images import`
#                           and make images-push read
#   OP.yaml                 its install manifest: its CRDs, its namespace, its
#                           RBAC, its users' roles and its Deployment (config/
#                           default), the image named by the index's digest
#   OP-cluster-wide.yaml    the same of config/cluster-wide
#   bundles/OP/VERSION/     its OLM bundle (bundles/etcd-cluster/VERSION-clusterwide
#                           too), as make bundle writes it into catalog/, with
#                           the operator's image by digest in the Deployment and
#                           relatedImages, and the release's time as createdAt
#   images/OP-bundle-VERSION.tar  that bundle's image, REGISTRY/OP-bundle:vVERSION
#                           as the catalog names it (etcd-cluster's
#                           VERSION-clusterwide too), labelled as its
#                           metadata/annotations.yaml says, for a catalog of
#                           the admin's own; a docker archive
#   sbom/OP-operator.linux-ARCH.cdx.json  an SBOM of each platform's binary
#                           (CycloneDX JSON, cyclonedx-gomod bin: the Go
#                           modules linked into it), checked against
#                           CycloneDX's schema before the release counts
#   RELEASE-NOTES.md        the release's section of CHANGELOG.md, for the
#                           GitHub Release (.github/workflows/release.yml)
#   SHA256SUMS              every file's checksum
#
# in OUT. `kubectl apply --server-side -f OUT/gordon.yaml` installs gordon on
# any cluster that can pull its image; the namespaced etcd operator runs in,
# and serves, namespace etc, which its manifest does not hold (deleting the
# manifest would delete the clusters in it): kubectl create namespace etc
# first.
#
# usage: scripts/release.sh VERSION [OUT]
#        scripts/release.sh image OPERATOR ARCHIVE TAG...
#        scripts/release.sh bundle-image BUNDLE DIR
#        scripts/release.sh push [OUT]
#        scripts/release.sh notes VERSION
#        scripts/release.sh manifest OPERATOR VARIANT IMAGE
#        scripts/release.sh import-flags ARCHIVE
#        scripts/release.sh released VERSION | worktree VERSION
#   VERSION   x.y.z
#   OUT       the directory to write (dist)
#   image     build only OPERATOR's image into ARCHIVE, named TAG...; print
#             its digest (make images, make deploy)
#   bundle-image  build the image of the OLM bundle in directory BUNDLE
#             (PACKAGE/VERSION: its manifests/ and metadata/) into
#             DIR/PACKAGE-bundle-VERSION.tar, named as the catalog names it
#             (make images, for the catalog's bundles)
#   push      push the images of OUT (dist) to the registry their names
#             say, every platform (docker login first)
#   notes     print VERSION's section of CHANGELOG.md (the release notes)
#   manifest  print the install manifest of OPERATOR's config/VARIANT
#             running IMAGE (make deploy)
#   import-flags  print the flags of `ctr images import` that also name
#             the image of an OCI ARCHIVE by its digest, as the manifests
#             name it (a plain import names it by tag only)
#   released  print the commit catalog/RELEASES records for VERSION (nothing
#             for a version it does not list)
#   worktree  print the path of a git worktree of VERSION's commit, under
#             bin/worktrees, checked out from the history the first time;
#             TREE=that path builds the image and manifests VERSION shipped
# $PLATFORMS: linux/amd64,linux/arm64; $REGISTRY: ghcr.io/operator-workshops;
# $IMAGE_VERSION: the version image's label says (the tree's catalog/VERSION;
# a release whose bundle an older tree generated, gordon 0.1.0, says its own);
# $SOURCE: the repository the images' labels name; $TREE: the source tree
# the image subcommand builds from (this one).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PATH="${BIN:-$root/bin}:$PATH"
registry=${REGISTRY:-ghcr.io/operator-workshops}
platforms=${PLATFORMS:-linux/amd64,linux/arm64}
# The source tree the images and manifests are built from: this one, or a
# worktree of a released commit (scripts/olm-images.sh, tests/deploy).
tree=${TREE:-$root}
source_url=${SOURCE:-https://github.com/operator-workshops/workshop}
operators=(database mysql-backup etcd-cluster gordon)

. "$root/scripts/kept-build.sh"
# shellcheck source=scripts/toolbox.sh
. "$root/scripts/toolbox.sh"

say() { echo "release.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# A directory of this run's own, removed when it exits, failed or not.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
usage() {
	sed -n '/^# usage:/,/^set -euo/{/^set/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}

# revision prints the commit the images are built from, marked when the
# tree has changes it does not hold ($release_rev once release has asked git).
revision() {
	[ -z "${release_rev:-}" ] || { echo "$release_rev"; return; }
	local r
	r=$(git -C "$tree" rev-parse HEAD 2>/dev/null) || { echo unknown; return; }
	if [ -n "$(git -C "$tree" status --porcelain --untracked-files=no 2>/dev/null)" ]; then r+=-dirty; fi
	echo "$r"
}

# image OPERATOR ARCHIVE VERSION TAG... builds the operator for each platform
# into an OCI archive; prints the image index's digest.
image() {
	local op=$1 archive=$2 version=$3 work p arch args=() t start=$SECONDS
	shift 3
	[ -d "$tree/operators/$op/cmd" ] || die "no operator $op in $tree (operators: ${operators[*]})"
	work=$(mktemp -d "$scratch/$op.XXXXXX")
	for p in ${platforms//,/ }; do
		[[ $p == linux/* ]] || die "PLATFORMS: $p: the operators run on linux/ARCH"
		arch=${p#linux/}
		mkdir -p "$work/$arch"
		GOWORK=$tree/go.work CGO_ENABLED=0 GOOS=linux GOARCH=$arch \
			kept_build "$tree" "$(tree_key)/$op-operator-linux-$arch" "$work/$arch/manager" \
			-trimpath -ldflags "-s -w" "./operators/$op/cmd"
		args+=(--platform "$p=$work/$arch")
		# A release says what each binary is made of: the Go modules
		# linked into it, from its build information.
		[ -z "${sbom_dir:-}" ] ||
			cyclonedx-gomod bin -json -output "$sbom_dir/$op-operator.linux-$arch.cdx.json" -version "v$version" "$work/$arch/manager"
	done
	for t in "$@"; do args+=(--tag "$t"); done
	mkdir -p "$(dirname "$archive")"
	mkimage --out "$archive" --digest-file "$work/digest" "${args[@]}" \
		--entrypoint /manager --user 65532:65532 \
		--label "org.opencontainers.image.title=$op-operator" \
		--label "org.opencontainers.image.source=$source_url" \
		--label "org.opencontainers.image.revision=$(revision)" \
		--label "org.opencontainers.image.version=$version" \
		--label "org.opencontainers.image.licenses=Apache-2.0"
	say "built $op-operator for $platforms in $((SECONDS - start))s"
	cat "$work/digest"
}

# sboms DIR checks the SBOMs image wrote into DIR: one per operator and
# platform, each a CycloneDX document its schema accepts, that names the
# operator's module and the modules linked into it (scripts/images/sbomcheck,
# against the schemas cyclonedx-go publishes, read offline).
sboms() {
	local dir=$1 op p files=()
	for op in "${operators[@]}"; do
		for p in ${platforms//,/ }; do files+=("$dir/$op-operator.${p/\//-}.cdx.json"); done
	done
	images_program sbomcheck "$scratch/sbomcheck"
	"$scratch/sbomcheck" -schemas "$(pinned_source "$root/scripts/images" github.com/CycloneDX/cyclonedx-go)/schema" "${files[@]}" ||
		die "the SBOMs in $dir do not pass CycloneDX's schema (above)"
	say "${#files[@]} SBOMs (CycloneDX) in $dir, checked against CycloneDX's schema"
}

# notes VERSION prints the release notes of VERSION: its section of
# CHANGELOG.md, from the heading that names it ("## 0.3.0 (...)", or
# "## Unreleased (catalog 0.3.0)" until it is released) to the next.
notes() {
	local text
	text=$(awk -v v="$1" '
		/^## / { if (found) exit; n = split($0, w, /[ ()]+/); for (i = 2; i <= n; i++) if (w[i] == v) found = 1 }
		found { print }' "$root/CHANGELOG.md")
	[ "$(wc -l <<<"$text")" -gt 2 ] || die "CHANGELOG.md has no section for $1 (a heading '## $1 (...)' and what changed): write it first (CONTRIBUTING.md, Releasing)"
	echo "$text"
}

# tree_key names the source tree among kept builds: a worktree of a release
# by its commit, this tree as tree. (Two trees under one name cost links,
# never a stale binary: go build links again whenever the sources differ.)
tree_key() { if [ "$tree" = "$root" ]; then echo tree; else basename "$tree"; fi; }

# mkimage runs scripts/images/mkimage, built for each run (kept_build), so
# that it is never stale.
mkimage() {
	[ -x "$scratch/mkimage" ] || images_program mkimage "$scratch/mkimage"
	"$scratch/mkimage" "$@"
}

# bundle_image BUNDLE DIR builds the image of the OLM bundle in directory
# BUNDLE (PACKAGE/VERSION): its manifests/ and metadata/, labelled as its
# metadata/annotations.yaml says (opm and OLM read the labels), into
# DIR/PACKAGE-bundle-VERSION.tar, named REGISTRY/PACKAGE-bundle:vVERSION as
# the catalog names it (catalog/template.yaml).
bundle_image() {
	local dir=${1%/} pkg v stage labels=() key value
	[ -f "$dir/metadata/annotations.yaml" ] || die "$dir: not a bundle (no metadata/annotations.yaml)"
	pkg=$(basename "$(dirname "$dir")") v=$(basename "$dir")
	stage=$(mktemp -d "$scratch/bundle.XXXXXX")
	cp -r "$dir/manifests" "$dir/metadata" "$stage/"
	while read -r key value; do
		labels+=(--label "${key%:}=$value")
	done < <(sed -n 's/^  \(operators\.operatorframework\.io\.[^ ]*\) \(.*\)$/\1 \2/p' "$dir/metadata/annotations.yaml")
	[ ${#labels[@]} -ge 6 ] || die "$dir/metadata/annotations.yaml: found ${#labels[@]} bundle labels, want 6"
	mkdir -p "$2"
	mkimage --out "$2/$pkg-bundle-$v.tar" --layer "$stage" "${labels[@]}" --tag "$registry/$pkg-bundle:v$v"
}

# released VERSION prints the commit catalog/RELEASES records for VERSION.
released() { awk -v v="$1" '$1 == v { print $2 }' "$root/catalog/RELEASES"; }

# worktree VERSION prints the path of a git worktree of VERSION's commit.
worktree() {
	local commit dir
	commit=$(released "$1")
	[ -n "$commit" ] || die "catalog/RELEASES records no commit for $1"
	dir=${BIN:-$root/bin}/worktrees/$commit
	mkdir -p "${dir%/*}"
	# Two runs side by side (make test's local and kind parts) take turns.
	exec 8>"${dir%/*}/.lock"
	flock 8
	if [ ! -e "$dir/.git" ]; then
		git -C "$root" cat-file -e "$commit^{commit}" 2>/dev/null ||
			die "commit $commit of release $1 (catalog/RELEASES) is not in this clone's history: fetch it (git fetch --unshallow)"
		git -C "$root" worktree prune
		git -C "$root" worktree add --detach "$dir" "$commit" >/dev/null 2>&1 || die "git worktree add $dir $commit failed"
	fi
	echo "$dir"
}

# crds OPERATOR prints the files of crds/ that define OPERATOR's API: those of
# its API group.
crds() {
	local group
	group=$(sed -n 's/.*schema.GroupVersion{Group: "\([^"]*\)".*/\1/p' "$tree"/operators/"$1"/api/*/groupversion_info.go)
	[ -n "$group" ] || die "operators/$1 has no API group"
	ls "$tree/crds/${group}"_*.yaml
}

# manifest OPERATOR VARIANT IMAGE prints the install manifest of the
# operator's config/VARIANT running IMAGE: its CRDs, then what kustomize
# makes of the variant.
manifest() {
	local op=$1 variant=$2 image=$3 dir out f
	dir=$tree/operators/$op/config/$variant
	[ -f "$dir/kustomization.yaml" ] || die "operators/$op/config/$variant: no such variant (see operators/$op/config)"
	out=$(kubectl kustomize "$dir")
	# The manifests name the image $op-operator:dev, which no registry has.
	grep -q "^ *image: $op-operator:dev\$" <<<"$out" || die "operators/$op/config/$variant does not name the image $op-operator:dev"
	# shellcheck disable=SC2001 # a line's value, anchored
	out=$(sed "s|^\( *image: \)$op-operator:dev\$|\1$image|" <<<"$out")
	for f in $(crds "$op"); do
		sed '/^---$/d' "$f"
		echo ---
	done
	echo "$out"
}

release() {
	local version=$1 out=$2 op digest image variant file sums gen=() dir start=$SECONDS
	[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "VERSION=$version: want x.y.z (make release VERSION=$(cat "$root/catalog/VERSION"))"
	[ "$version" = "$(cat "$root/catalog/VERSION")" ] ||
		die "VERSION=$version, but the tree is release $(cat "$root/catalog/VERSION") (catalog/VERSION): to release $version, bump catalog/VERSION and list its bundles in catalog/template.yaml, then make generate (CONTRIBUTING.md, Releasing)"
	command -v kubectl >/dev/null || die "kubectl is missing: make tools builds it into bin/"
	rm -rf "$out"
	mkdir -p "$out/images" "$out/sbom"
	"$root/scripts/build-tools.sh" cyclonedx-gomod
	sbom_dir=$out/sbom
	# Asked once: every image and manifest of the release names it.
	release_rev=$(revision)
	for op in "${operators[@]}"; do
		digest=$(image "$op" "$out/images/$op-operator.tar" "$version" "$registry/$op-operator:v$version")
		image=$registry/$op-operator@$digest
		gen+=(-image "$op=$image")
		for variant in default cluster-wide; do
			file=$op.yaml
			[ "$variant" = default ] || file=$op-$variant.yaml
			{
				echo "# $op-operator $version ($variant): kubectl apply --server-side -f $file"
				[ "$op/$variant" != etcd-cluster/default ] || echo "# It runs in, and serves, namespace etc: kubectl create namespace etc first."
				echo "# Image $registry/$op-operator:v$version, by digest; built from $release_rev."
				manifest "$op" "$variant" "$image"
			} >"$out/$file"
		done
	done
	(cd "$root/catalog/gen" && GOWORK=off go run -tags containers_image_openpgp . -root "$root" -registry "$registry" \
		-out "$out" -created-at "$(date -u +%Y-%m-%dT%H:%M:%SZ)" -platforms "$platforms" "${gen[@]}" bundle) >&2
	(cd "$root/charts/gen" && GOWORK=off go run . -root "$root" -registry "$registry" -version "$version" \
		-out "$out/charts" "${gen[@]}") >&2
	for dir in "$out"/bundles/*/"$version"*; do bundle_image "$dir" "$out/images"; done
	sboms "$out/sbom"
	notes "$version" >"$out/RELEASE-NOTES.md"
	sums=$(cd "$out" && find . -type f | sed 's|^\./||' | sort | xargs sha256sum)
	echo "$sums" >"$out/SHA256SUMS"
	say "release $version in $out ($((SECONDS - start))s):"
	(cd "$out" && find . -type f | sed 's|^\./|  |' | sort) >&2
}

[ $# -ge 1 ] || usage
case $1 in
bundle-image)
	[ $# = 3 ] || usage
	bundle_image "$2" "$3"
	;;
image)
	[ $# -ge 4 ] || usage
	image "$2" "$3" "${IMAGE_VERSION:-$(cat "$tree/catalog/VERSION")}" "${@:4}"
	;;
push)
	[ $# -le 2 ] || usage
	dir=${2:-$root/dist}/images
	[ -n "$(find "$dir" -maxdepth 1 -name '*.tar' 2>/dev/null)" ] || die "no images in $dir: make release VERSION=x.y.z first"
	(cd "$root/scripts/images" && GOWORK=off go run ./push "$dir"/*.tar)
	;;
notes)
	[ $# = 2 ] || usage
	notes "$2"
	;;
manifest)
	[ $# = 4 ] || usage
	manifest "$2" "$3" "$4"
	;;
released)
	[ $# = 2 ] || usage
	released "$2"
	;;
worktree)
	[ $# = 2 ] || usage
	worktree "$2"
	;;
import-flags)
	[ $# = 2 ] || usage
	# A docker archive has no index.json: no flags.
	name=$(tar -xOf "$2" index.json 2>/dev/null | jq -r '.manifests[0].annotations["io.containerd.image.name"] // empty') || true
	[ -z "$name" ] || echo "--digests --base-name ${name%:*}"
	;;
-*) usage ;;
*)
	[ $# -le 2 ] || usage
	release "$1" "${2:-$root/dist}"
	;;
esac
