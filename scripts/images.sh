#!/usr/bin/env bash
# Builds the images the local cluster's real node runs, and imports them into
# its containerd. Nothing is pulled: root filesystems come from Debian's
# packages (debootstrap), programs from Go modules, and scripts/images/mkimage
# (go-containerregistry, no daemon) writes each image as a docker archive
# tagged with the name the workshop's manifests use. These are local stand-ins,
# not the upstream images:
#
#   registry.k8s.io/pause:3.10          pod sandbox (scripts/images/pause), the
#                                       name containerd's config asks for
#   registry.k8s.io/coredns/coredns:v1.13.1
#                                       CoreDNS built from its Go module
#   mysql:5.7, mysql:8.0                MariaDB 10.11 from Debian bookworm, with an
#                                       entrypoint that honours MYSQL_ROOT_PASSWORD
#                                       and MYSQL_DATABASE like the official one
#   docker.io/prgcont/etcd:v3.2.13,     the project's etcd and etcdctl
#   quay.io/coreos/etcd:v3.2.13         (scripts/tools/etcd, 3.6) on the toolbox
#   prgcont/gordon:v1.0                 a program that logs a line and waits
#   workshop.local/toolbox:bookworm     Debian with bash, curl, dig, nc, ip, jq
#
# and, built only when asked for by name (scripts/olm.sh does):
#
#   workshop.local/olm:VERSION          OLM's olm and catalog operators and cpb
#                                       (scripts/tools/olm) on the toolbox, which
#                                       is also OLM's "util image" (/bin/cp, /bin/cpb)
#
# Mongo has no Debian package, so there is no mongo image: mongo Databases run
# on fake nodes only. Every archive is rebuilt only when its inputs change
# (package lists, files, programs): a stamp beside it holds their hash. Root
# filesystems are cached by package list; delete the cache directory to
# refresh them from the mirror.
#
# usage: scripts/images.sh build|import ADDRESS [STATE_DIR [IMAGE...]]|list|tags|pause-image|olm-image
#   build        build the archives that are missing or stale
#   import ADDR  build, then import into the containerd at socket ADDR the
#                archives it does not have yet (the IMAGEs named, else all
#                but olm)
#   list         print each image's archive and names
#   tags         print every image name, one a line
#   pause-image  print the sandbox image's name
#   olm-image    print the OLM image's name
# $WORKSHOP_IMAGES_CACHE is the cache (~/.cache/workshop-images); $DEBIAN_MIRROR
# the mirror (http://deb.debian.org/debian).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${BIN:-$root/bin}
src=$root/scripts/images
cache=${WORKSHOP_IMAGES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/workshop-images}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
pause_image=registry.k8s.io/pause:3.10
images=(pause coredns gordon toolbox etcd mysql)

say() { echo "images.sh: $*" >&2; }
die() { say "$*"; exit 1; }
hash() { sha256sum | cut -c1-16; }

# programs builds mkimage, pause and gordon when their sources changed.
programs() {
	local want
	want=$(cat "$src"/go.mod "$src"/go.sum "$src"/*/*.go | hash)
	if [ "$(cat "$cache/bin/.stamp" 2>/dev/null)" = "$want" ]; then return 0; fi
	say "building mkimage, pause and gordon"
	mkdir -p "$cache/bin"
	(cd "$src" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 \
		go build -trimpath -ldflags "-s -w" -o "$cache/bin/" ./mkimage ./pause ./gordon)
	echo "$want" >"$cache/bin/.stamp"
}

# The packages of each root filesystem. toolbox is also the etcd image's base.
toolbox_packages=bash,ca-certificates,curl,dnsutils,iproute2,iputils-ping,jq,netcat-openbsd,procps
mysql_packages=mariadb-server,mariadb-client

# slim removes from a root filesystem what a container never reads, and opens
# its top directory (mktemp made it 0700) to every user.
slim() {
	chmod 0755 "${1:?}"
	rm -rf "${1:?}"/var/cache/apt/archives/*.deb "${1:?}"/var/lib/apt/lists/* \
		"${1:?}"/usr/share/doc/* "${1:?}"/usr/share/man/* "${1:?}"/usr/share/info/* \
		"${1:?}"/var/log/*.log "${1:?}"/var/log/apt/* "${1:?}"/dev/*
}

# mysql_fixup gives user mysql uid and gid 999, the official image's, which
# the operators run the server as, and empties the data directory, which the
# entrypoint initialises on the pod's volume.
mysql_fixup() {
	local r=$1 uid gid
	uid=$(awk -F: '$1 == "mysql" { print $3 }' "$r/etc/passwd")
	gid=$(awk -F: '$1 == "mysql" { print $3 }' "$r/etc/group")
	if [ -z "$uid" ] || [ -z "$gid" ]; then die "no user mysql in the MariaDB root filesystem"; fi
	sed -i "s/^mysql:x:$uid:$gid:/mysql:x:999:999:/" "$r/etc/passwd"
	sed -i "s/^mysql:x:$gid:/mysql:x:999:/" "$r/etc/group"
	find "$r" -xdev -uid "$uid" -exec chown -h 999 {} +
	find "$r" -xdev -gid "$gid" -exec chgrp -h 999 {} +
	rm -rf "${r:?}"/var/lib/mysql/*
	mkdir -p "$r/run/mysqld"
	chown 999:999 "$r/run/mysqld" "$r/var/lib/mysql"
	chmod 0775 "$r/run/mysqld" "$r/var/lib/mysql"
}

# unmount_under DIR unmounts what a failed debootstrap left mounted in DIR
# (/proc, /sys), so that removing DIR cannot reach the machine's own.
unmount_under() {
	local m
	while read -r m; do umount -l "$m" || true; done < <(awk -v d="$1/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r)
}

# rootfs NAME PACKAGES [FIXUP] prints the path of a root filesystem tarball
# with PACKAGES installed, made by debootstrap once per package list.
rootfs() {
	local name=$1 packages=$2 fixup=${3:-} key dir tar
	key=$( (echo "$suite $mirror $packages"; declare -f slim; [ -z "$fixup" ] || declare -f "$fixup") | hash)
	tar=$cache/rootfs/$name-$key.tar
	if [ ! -f "$tar" ]; then
		command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap"
		[ "$(id -u)" = 0 ] || die "debootstrap needs root"
		say "debootstrap $name root filesystem ($suite, $packages): about 2 minutes"
		local start=$SECONDS
		mkdir -p "$cache/rootfs"
		dir=$(mktemp -d "$cache/rootfs/$name.XXXXXX")
		if ! debootstrap --variant=minbase --include="$packages" "$suite" "$dir" "$mirror" >"$dir.log" 2>&1; then
			tail -n 20 "$dir.log" >&2
			unmount_under "$dir"
			rm -rf "$dir"
			die "debootstrap $name failed (log above; full log $dir.log)"
		fi
		slim "$dir"
		[ -z "$fixup" ] || "$fixup" "$dir"
		tar -C "$dir" --numeric-owner -cf "$tar.tmp" .
		mv "$tar.tmp" "$tar"
		rm -rf "$dir" "$dir.log"
		# Older tarballs of the same name are stale.
		find "$cache/rootfs" -maxdepth 1 -name "$name-*.tar" ! -path "$tar" -delete
		say "root filesystem $name ready in $((SECONDS - start))s ($(du -h "$tar" | cut -f1))"
	fi
	echo "$tar"
}

# stage DIR [DEST=SRC[:MODE]]... makes DIR a tree of the given files (a
# directory when SRC is empty), for a layer of their own.
stage() {
	local dir=$1 spec dest from mode
	shift
	rm -rf "$dir"
	mkdir -p "$dir"
	for spec in "$@"; do
		dest=${spec%%=*}
		from=${spec#*=}
		mode=
		if [[ $from == *:* ]]; then mode=${from##*:}; from=${from%:*}; fi
		if [ -z "$from" ]; then
			mkdir -p "$dir/$dest"
		else
			install -D "$from" "$dir/$dest"
		fi
		[ -z "$mode" ] || chmod "$mode" "$dir/$dest"
	done
}

# recipe NAME sets, for image NAME: layers (tar files or staged directories),
# args (mkimage's other flags) and inputs (files whose content the image
# depends on besides the layers' tar files).
recipe() {
	local b=$cache/bin stage_dir=$cache/stage/$1
	layers=() args=() inputs=()
	case $1 in
	pause)
		stage "$stage_dir" pause="$b/pause":0755
		args=(--entrypoint /pause)
		inputs=("$b/pause")
		;;
	coredns)
		"$root/scripts/build-tools.sh" coredns
		stage "$stage_dir" coredns="$bin/coredns":0755
		args=(--entrypoint /coredns --expose 53/udp --expose 53/tcp)
		inputs=("$bin/coredns")
		;;
	gordon)
		stage "$stage_dir" gordon="$b/gordon":0755
		args=(--entrypoint /gordon)
		inputs=("$b/gordon")
		;;
	toolbox)
		layers=("$(rootfs toolbox "$toolbox_packages")")
		args=(--cmd bash)
		;;
	etcd)
		"$root/scripts/build-tools.sh" etcd
		layers=("$(rootfs toolbox "$toolbox_packages")")
		stage "$stage_dir" usr/local/bin/etcd="$bin/etcd":0755 usr/local/bin/etcdctl="$bin/etcdctl":0755 \
			var/etcd=:1777 var/lib/etcd=:1777
		args=(--cmd /usr/local/bin/etcd --expose 2379/tcp --expose 2380/tcp)
		inputs=("$bin/etcd" "$bin/etcdctl")
		;;
	olm)
		"$root/scripts/build-tools.sh" olm
		layers=("$(rootfs toolbox "$toolbox_packages")")
		# /bin is a link to usr/bin in the toolbox: a layer's bin/ would hide it.
		stage "$stage_dir" usr/bin/olm="$bin/olm":0755 usr/bin/catalog="$bin/catalog":0755 usr/bin/cpb="$bin/cpb":0755
		args=(--cmd /usr/bin/olm)
		inputs=("$bin/olm" "$bin/catalog" "$bin/cpb")
		;;
	mysql)
		layers=("$(rootfs mysql "$mysql_packages" mysql_fixup)")
		stage "$stage_dir" usr/local/bin/docker-entrypoint.sh="$src/mysql/docker-entrypoint.sh":0755 \
			etc/mysql/mariadb.conf.d/90-workshop.cnf="$src/mysql/workshop.cnf":0644 \
			docker-entrypoint-initdb.d=:0755
		args=(--entrypoint docker-entrypoint.sh --cmd mariadbd --expose 3306/tcp)
		inputs=("$src/mysql/docker-entrypoint.sh" "$src/mysql/workshop.cnf")
		;;
	*) die "unknown image $1 (images: ${images[*]})" ;;
	esac
	[ ! -d "$stage_dir" ] || layers+=("$stage_dir")
	inputs+=("$cache/bin/mkimage")
	local t
	for t in $(tags "$1"); do args+=(--tag "$t"); done
}

# tags NAME prints the names image NAME is tagged with: those the workshop's
# manifests use.
tags() {
	case $1 in
	pause) echo "$pause_image" ;;
	coredns) echo registry.k8s.io/coredns/coredns:v1.13.1 ;;
	gordon) echo prgcont/gordon:v1.0 ;;
	toolbox) echo workshop.local/toolbox:bookworm ;;
	etcd) echo docker.io/prgcont/etcd:v3.2.13 quay.io/coreos/etcd:v3.2.13 ;;
	mysql) echo mysql:5.7 mysql:8.0 ;;
	olm) olm_image ;;
	esac
}

# olm_image prints the OLM image's name, tagged with the release
# scripts/tools/olm pins.
olm_image() {
	local v
	v=$(sed -n 's|^\tgithub.com/operator-framework/operator-lifecycle-manager \(v[^ ]*\).*|\1|p' "$root/scripts/tools/olm/go.mod")
	[ -n "$v" ] || die "scripts/tools/olm/go.mod does not pin operator-lifecycle-manager"
	echo "workshop.local/olm:$v"
}

# build_image NAME writes $cache/archives/NAME.tar unless its stamp matches
# its inputs; it prints the stamp.
build_image() {
	local name=$1 archive=$cache/archives/$1.tar want f start=$SECONDS
	recipe "$name"
	want=$( (
		printf '%s\n' "${args[@]}"
		for f in "${layers[@]}"; do if [ -f "$f" ]; then basename "$f"; fi; done
		for f in "${inputs[@]}"; do sha256sum <"$f"; done
		[ ! -d "$cache/stage/$name" ] || (cd "$cache/stage/$name" && find . -printf '%p %m\n' | sort)
	) | hash)
	if [ -f "$archive" ] && [ "$(cat "$archive.stamp" 2>/dev/null)" = "$want" ]; then
		echo "$want"
		return 0
	fi
	mkdir -p "$cache/archives"
	local layer_flags=() l
	for l in "${layers[@]}"; do layer_flags+=(--layer "$l"); done
	"$cache/bin/mkimage" --out "$archive" "${layer_flags[@]}" "${args[@]}"
	echo "$want" >"$archive.stamp"
	say "built $name ($(du -h "$archive" | cut -f1)) in $((SECONDS - start))s"
	echo "$want"
}

build_all() {
	local name
	mkdir -p "$cache"
	programs
	for name in "${images[@]}"; do build_image "$name" >/dev/null; done
}

# import_all ADDRESS STATE [NAME...] imports each archive (of NAMEs, else of
# every image but olm) the containerd at ADDRESS has not imported yet. The
# stamps of what it holds live in STATE, beside its root directory, which
# scripts/node.sh keeps from one cluster to the next.
import_all() {
	local address=$1 state=$2 name want first held
	shift 2
	local names=("$@")
	[ ${#names[@]} -gt 0 ] || names=("${images[@]}")
	local c=(ctr --address "$address" -n k8s.io)
	programs
	mkdir -p "$state"
	held=$("${c[@]}" images ls -q)
	for name in "${names[@]}"; do
		want=$(build_image "$name")
		first=$(tags "$name")
		first=${first%% *}
		if [ "$(cat "$state/$name" 2>/dev/null)" = "$want" ] && grep -qxF "$(normalise "$first")" <<<"$held"; then
			continue
		fi
		local start=$SECONDS
		"${c[@]}" images import "$cache/archives/$name.tar" >/dev/null
		echo "$want" >"$state/$name"
		say "imported $name in $((SECONDS - start))s"
	done
}

# normalise prints an image name as containerd stores it.
normalise() {
	local n=$1
	if [[ $n != */* ]]; then
		n=docker.io/library/$n
	else
		case ${n%%/*} in
		*.* | *:* | localhost) ;;
		*) n=docker.io/$n ;;
		esac
	fi
	echo "$n"
}

case ${1:-} in
build) build_all ;;
import)
	[ -n "${2:-}" ] || die "usage: scripts/images.sh import ADDRESS [STATE_DIR [IMAGE...]]"
	import_all "$2" "${3:-$(dirname "$2")/imported}" "${@:4}"
	;;
list)
	for name in "${images[@]}"; do echo "$cache/archives/$name.tar $(tags "$name")"; done
	;;
tags)
	for name in "${images[@]}"; do tags "$name"; done | tr ' ' '\n'
	;;
pause-image) echo "$pause_image" ;;
olm-image) olm_image ;;
*)
	sed -n '/^# usage:/,/^set -euo/{/^set/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
	;;
esac
