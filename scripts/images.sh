#!/usr/bin/env bash
# Builds the images the local cluster's real node runs, and imports them into
# its containerd. Nothing is pulled: root filesystems come from Debian's
# packages (debootstrap), programs from Go modules, and scripts/images/mkimage
# (go-containerregistry, no daemon) writes each image as a docker archive
# tagged with the name the workshop's manifests use. (One file of over 300
# lines, on purpose: each image's recipe is a few lines of the one machinery
# they share, of root filesystems, stamps and layers.) These are local
# stand-ins, not the upstream images:
#
#   registry.k8s.io/pause:3.10          pod sandbox (scripts/images/pause), the
#                                       name containerd's config asks for
#   registry.k8s.io/coredns/coredns:v1.13.1
#                                       CoreDNS built from its Go module
#   mysql:5.7, mysql:8.0                MariaDB 10.11 from Debian bookworm, with an
#                                       entrypoint that honours MYSQL_ROOT_PASSWORD
#                                       and MYSQL_DATABASE like the official one
#   docker.io/prgcont/etcd:v3.2.13,     etcd and etcdctl 3.2.13, built from their
#   quay.io/coreos/etcd:v3.2.13         source (scripts/tools/etcd-3.2), on the toolbox
#   prgcont/gordon:v1.0                 a program that logs a line and waits
#   workshop.local/toolbox:bookworm,    Debian with bash, curl, dig, nc, ip, jq: the
#   nicolaka/netshoot:v0.13             tools of netshoot, the network toolbox image
#
# and, built only when asked for by name (scripts/olm.sh does; tests/realnode
# asks for etcd-3.3 to upgrade a cluster to it):
#
#   quay.io/coreos/etcd:v3.3.27 (etcd-3.3), quay.io/coreos/etcd:v3.5.21 (etcd-3.5)
#                                       etcd and etcdctl of those releases, built
#                                       from their source (scripts/tools/etcd-3.3,
#                                       etcd-3.5), laid out as the etcd image
#   workshop.local/olm:VERSION          OLM's olm and catalog operators and cpb
#                                       (scripts/tools/olm), and cp
#                                       (scripts/images/cp): OLM's "util image"
#                                       too (/bin/cp, /bin/cpb); Go programs only,
#                                       built without root
#
# and, for kind offline (scripts/kind.sh, when kind's released node image
# cannot be pulled), the node image, what it holds as kind's own does, and
# the images a learner online pulls from Docker Hub or quay.io, which
# scripts/kind.sh serves from a registry mirror instead (marked "mirrored";
# so are the gordon, netshoot, etcd and mysql images above):
#
#   workshop.local/kind-node:VERSION    a kind node: Debian bookworm (whose systemd
#                                       still boots on cgroup v1, unlike the
#                                       released image's), containerd, runc and
#                                       the CNI plugins from Debian, kind's node
#                                       files from its pinned module, kubeadm,
#                                       kubelet and kubectl of VERSION (the control
#                                       plane's), a static bridge CNI config in
#                                       place of kindnetd, and these images
#                                       preloaded in its containerd, named as
#                                       kubeadm asks for them, with the pause and
#                                       CoreDNS images above: only what kind's
#                                       own node image holds, less kindnetd
#   registry.k8s.io/kube-apiserver:VERSION, kube-controller-manager, kube-scheduler
#                                       the control plane's binaries
#   registry.k8s.io/kube-proxy:VERSION  kube-proxy on Debian's iptables
#   workshop.local/kube-etcd:ETCD       the project's etcd, as kubeadm's etcd
#   workshop.local/local-provisioner:dev
#                                       scripts/local-provisioner, the node's
#                                       default StorageClass "standard" (kind's
#                                       local-path-provisioner's role)
#   mongo:4.0                           (mirrored) FerretDB (scripts/tools/ferretdb)
#                                       on SQLite, a MongoDB wire-protocol server:
#                                       the mongo shell is not in it
#   busybox:1.36                        (mirrored) Debian's static busybox, a link
#                                       per applet
#   nginx:1.27                          (mirrored) Debian's nginx, logging to the
#                                       container's output (lab 2's Deployment)
#
# Mongo has no Debian package, so the local cluster's mongo Databases run
# on fake nodes only. Every archive is rebuilt only when its inputs change
# (package lists, files, programs): a stamp beside it holds their hash. Root
# filesystems are cached by package list; delete the cache directory to
# refresh them from the mirror.
#
# usage: scripts/images.sh build|import ADDRESS [STATE_DIR [IMAGE...]]|list|tags|pause-image|olm-image|kind-node|mirrored|archive IMAGE...
#   build        build the archives that are missing or stale
#   import ADDR  build, then import into the containerd at socket ADDR the
#                archives it does not have yet (the IMAGEs named, else all
#                but olm)
#   list         print each image's archive and names
#   tags         print every image name, one a line
#   pause-image  print the sandbox image's name
#   olm-image    print the OLM image's name
#   kind-node    build the kind node image; print its archive and its name
#   mirrored     build the images a mirror serves to kind under their
#                upstream names; print their archives
#   archive IMAGE...  build the IMAGEs (olm, say); print their archives
# $WORKSHOP_IMAGES_CACHE is the cache (~/.cache/workshop-images); $DEBIAN_MIRROR
# the mirror (http://deb.debian.org/debian).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/toolbox.sh
. "$root/scripts/toolbox.sh"
# shellcheck source=scripts/kept-build.sh
. "$root/scripts/kept-build.sh"
bin=${BIN:-$root/bin}
src=$root/scripts/images
cache=${WORKSHOP_IMAGES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/workshop-images}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
pause_image=registry.k8s.io/pause:3.10
images=(pause coredns gordon toolbox etcd mysql)
# The images of kind only: what its node image preloads besides pause and
# coredns (kubeadm's and kind's own), and three more a mirror serves.
kind_images=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy kube-etcd local-provisioner mongo busybox nginx)
kind_preload=(pause coredns kube-apiserver kube-controller-manager kube-scheduler kube-proxy kube-etcd local-provisioner)
# What a learner on kind pulls by its upstream name, from a mirror here.
mirrored=(gordon toolbox etcd mysql mongo busybox nginx)

say() { echo "images.sh: $*" >&2; }
die() { say "$*"; exit 1; }
hash() { sha256sum | cut -c1-16; }

# programs builds mkimage, pause, gordon and cp (images_program: go build
# links again only when their sources changed).
programs() {
	mkdir -p "$cache/bin"
	for p in mkimage pause gordon cp; do images_program "$p" "$cache/bin/$p"; done
}

# The packages of each root filesystem. toolbox is also the etcd image's base.
toolbox_packages=bash,ca-certificates,curl,dnsutils,iproute2,iputils-ping,jq,netcat-openbsd,procps
mysql_packages=mariadb-server,mariadb-client
# kube-proxy programs the node's iptables; the kind node is kind's base image's
# list less what only rootless or network storage needs.
kube_proxy_packages=iptables,conntrack
kind_node_packages=systemd,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,e2fsprogs,bash,ca-certificates,curl,jq,procps,containerd,runc,containernetworking-plugins

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

# nginx_fixup sends nginx's logs to the container's output, as the official
# image does.
nginx_fixup() {
	ln -sf /dev/stdout "$1/var/log/nginx/access.log"
	ln -sf /dev/stderr "$1/var/log/nginx/error.log"
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
# args (mkimage's other flags), inputs (files whose content the image
# depends on besides the layers' tar files) and prepare (a function that
# makes a layer only when the image is to be built).
recipe() {
	local b=$cache/bin stage_dir=$cache/stage/$1
	layers=() args=() inputs=() prepare=
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
	etcd | etcd-3.3 | etcd-3.5)
		# The release the tags name, built from its own source, laid out
		# as upstream's image: etcd and etcdctl in /usr/local/bin, etcd the
		# command.
		local tool etcd etcdctl
		tool=$(etcd_tool "$1")
		"$root/scripts/build-tools.sh" "$tool"
		read -r etcd etcdctl _ < <("$root/scripts/build-tools.sh" --binaries "$tool")
		layers=("$(rootfs toolbox "$toolbox_packages")")
		stage "$stage_dir" usr/local/bin/etcd="$bin/$etcd":0755 usr/local/bin/etcdctl="$bin/$etcdctl":0755 \
			var/etcd=:1777 var/lib/etcd=:1777
		args=(--cmd /usr/local/bin/etcd --expose 2379/tcp --expose 2380/tcp)
		inputs=("$bin/$etcd" "$bin/$etcdctl")
		;;
	olm)
		# Go programs alone, where upstream's are: no root filesystem, so
		# no root needed to build it.
		"$root/scripts/build-tools.sh" olm
		stage "$stage_dir" bin/olm="$bin/olm":0755 bin/catalog="$bin/catalog":0755 bin/cpb="$bin/cpb":0755 bin/cp="$b/cp":0755
		args=(--cmd /bin/olm)
		inputs=("$bin/olm" "$bin/catalog" "$bin/cpb" "$b/cp")
		;;
	mysql)
		layers=("$(rootfs mysql "$mysql_packages" mysql_fixup)")
		stage "$stage_dir" usr/local/bin/docker-entrypoint.sh="$src/mysql/docker-entrypoint.sh":0755 \
			etc/mysql/mariadb.conf.d/90-workshop.cnf="$src/mysql/workshop.cnf":0644 \
			docker-entrypoint-initdb.d=:0755
		args=(--entrypoint docker-entrypoint.sh --cmd mariadbd --expose 3306/tcp)
		inputs=("$src/mysql/docker-entrypoint.sh" "$src/mysql/workshop.cnf")
		;;
	kube-apiserver | kube-controller-manager | kube-scheduler)
		"$root/scripts/build-tools.sh" kubernetes
		stage "$stage_dir" usr/local/bin/"$1"="$bin/$1":0755
		args=(--entrypoint "/usr/local/bin/$1")
		inputs=("$bin/$1")
		;;
	kube-proxy)
		"$root/scripts/build-tools.sh" kubernetes-node
		layers=("$(rootfs kube-proxy "$kube_proxy_packages")")
		stage "$stage_dir" usr/local/bin/kube-proxy="$src/kube-proxy/kube-proxy":0755 \
			usr/local/libexec/kube-proxy="$bin/kube-proxy":0755
		args=(--entrypoint /usr/local/bin/kube-proxy)
		inputs=("$bin/kube-proxy" "$src/kube-proxy/kube-proxy")
		;;
	kube-etcd)
		"$root/scripts/build-tools.sh" etcd
		stage "$stage_dir" usr/local/bin/etcd="$bin/etcd":0755 usr/local/bin/etcdctl="$bin/etcdctl":0755
		args=(--entrypoint /usr/local/bin/etcd)
		inputs=("$bin/etcd" "$bin/etcdctl")
		;;
	local-provisioner)
		"$root/scripts/build-tools.sh" local-provisioner
		stage "$stage_dir" local-provisioner="$bin/local-provisioner":0755
		args=(--entrypoint /local-provisioner)
		inputs=("$bin/local-provisioner")
		;;
	mongo)
		# As the Database operator runs mongo: port 27017, data in /data/db
		# (an emptyDir), as uid 999. /tmp is SQLite's for temporary files.
		"$root/scripts/build-tools.sh" ferretdb
		stage "$stage_dir" usr/local/bin/ferretdb="$bin/ferretdb":0755 data/db=:1777 tmp=:1777
		args=(--entrypoint /usr/local/bin/ferretdb --entrypoint --listen-addr=:27017
			--entrypoint --handler=sqlite --entrypoint --sqlite-url=file:/data/db/
			--entrypoint --state-dir=/data/db --entrypoint --telemetry=disable --expose 27017/tcp)
		inputs=("$bin/ferretdb")
		;;
	busybox)
		# Debian's static busybox alone, with a link per applet in /bin and
		# sh as the command, as the upstream image has it.
		local tar a
		tar=$(rootfs busybox busybox-static)
		rm -rf "$stage_dir"
		mkdir -p "$stage_dir/bin"
		tar -xOf "$tar" ./usr/bin/busybox >"$stage_dir/bin/busybox"
		chmod 0755 "$stage_dir/bin/busybox"
		for a in $("$stage_dir/bin/busybox" --list); do
			[ "$a" = busybox ] || ln -s busybox "$stage_dir/bin/$a"
		done
		args=(--cmd sh)
		inputs=("$stage_dir/bin/busybox")
		;;
	nginx)
		layers=("$(rootfs nginx nginx nginx_fixup)")
		args=(--cmd nginx --cmd -g --cmd "daemon off;" --expose 80/tcp --stop-signal SIGQUIT)
		;;
	kind-node)
		local name
		"$root/scripts/build-tools.sh" kubernetes kubernetes-node
		for name in "${kind_preload[@]}"; do build_image "$name" >/dev/null; done
		layers=("$(rootfs kind-node "$kind_node_packages" kind_node_fixup)" "$cache/stage/kind-node-preload")
		kind_node_stage "$stage_dir"
		args=(--entrypoint /usr/local/bin/entrypoint --entrypoint /sbin/init --env container=docker
			--stop-signal SIGRTMIN+3 --label "workshop.local/kind=$(kind_version)")
		inputs=("$bin/kubeadm" "$bin/kubelet" "$bin/kubectl" "$src"/kind-node/*)
		for name in "${kind_preload[@]}"; do inputs+=("$cache/archives/$name.tar.stamp"); done
		prepare=kind_node_preload
		;;
	*) die "unknown image $1 (images: ${images[*]} ${kind_images[*]} etcd-3.3 etcd-3.5 olm kind-node)" ;;
	esac
	[ ! -d "$stage_dir" ] || layers+=("$stage_dir")
	inputs+=("$cache/bin/mkimage")
	local t
	for t in $(tags "$1"); do args+=(--tag "$t"); done
}

# kube_version prints the release of the control plane's module, which
# build-tools.sh stamps into its binaries.
kube_version() {
	"$bin/kubeadm" version -o short
}

# kind_version prints the kind release scripts/tools/kind pins.
kind_version() {
	pinned_version "$root/scripts/tools/kind" sigs.k8s.io/kind
}

# kind_files prints the directory of kind's node files in its pinned module.
kind_files() {
	local dir
	dir=$(pinned_source "$root/scripts/tools/kind" sigs.k8s.io/kind)
	[ -d "$dir/images/base/files" ] || die "kind's node files are not in its module ($dir)"
	echo "$dir/images/base/files"
}

# kind_node_fixup does to the node's root filesystem what kind's base image
# does to Debian's: no service starts but those kind enables, systemd is init,
# and journald does not read the host's kernel log.
kind_node_fixup() {
	local r=$1
	rm -f "$r"/lib/systemd/system/multi-user.target.wants/* "$r"/etc/systemd/system/*.wants/* \
		"$r"/lib/systemd/system/local-fs.target.wants/* "$r"/lib/systemd/system/sockets.target.wants/*udev* \
		"$r"/lib/systemd/system/sockets.target.wants/*initctl* "$r"/lib/systemd/system/basic.target.wants/*
	find "$r"/lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete
	echo ReadKMsg=no >>"$r/etc/systemd/journald.conf"
	ln -sf /usr/lib/systemd/systemd "$r/sbin/init"
}

# kind_node_stage DIR makes the kind node's own layer: kind's node files (its
# entrypoint, kubelet and containerd units, containerd's config less the
# rootless snapshotter), kubeadm, kubelet and kubectl, the bridge CNI config,
# the manifests kind applies at creation (scripts/images/kind-node) and the
# units kind's base image enables.
kind_node_stage() {
	local d=$1 k f
	k=$(kind_files)
	stage "$d" usr/local/bin/entrypoint="$k/usr/local/bin/entrypoint":0755 \
		kind/bin/mount-product-files.sh="$k/kind/bin/mount-product-files.sh":0755 \
		kind/bin/undo-mount-hacks.sh="$k/kind/bin/undo-mount-hacks.sh":0755 \
		kind/bin/create-kubelet-cgroup-v2.sh="$k/kind/bin/create-kubelet-cgroup-v2.sh":0755 \
		etc/crictl.yaml="$k/etc/crictl.yaml":0644 etc/default/kubelet="$k/etc/default/kubelet":0644 \
		etc/sysctl.d/10-network-security.conf="$k/etc/sysctl.d/10-network-security.conf":0644 \
		etc/sysctl.d/10-network-magic.conf="$k/etc/sysctl.d/10-network-magic.conf":0644 \
		usr/bin/kubeadm="$bin/kubeadm":0755 usr/bin/kubelet="$bin/kubelet":0755 usr/bin/kubectl="$bin/kubectl":0755 \
		etc/cni/net.d/10-workshop.conflist="$src/kind-node/10-workshop.conflist":0644 \
		kind/manifests/default-cni.yaml="$src/kind-node/default-cni.yaml":0644 \
		kind/manifests/default-storage.yaml="$src/kind-node/default-storage.yaml":0644 \
		etc/kubernetes/manifests= opt/cni/bin= etc/systemd/system/multi-user.target.wants=
	for f in kubelet.slice undo-mount-hacks.service kubelet.service containerd.service \
		kubelet.service.d/10-kubeadm.conf kubelet.service.d/11-kind.conf; do
		install -D -m 0644 "$k/etc/systemd/system/$f" "$d/etc/systemd/system/$f"
	done
	for f in kubelet containerd undo-mount-hacks; do
		ln -s "/etc/systemd/system/$f.service" "$d/etc/systemd/system/multi-user.target.wants/$f.service"
	done
	ln -s /dev/null "$d/etc/systemd/system/systemd-binfmt.service"
	# Debian's containerd and CNI plugins, where kind's units and config look.
	ln -s /usr/bin/containerd "$d/usr/local/bin/containerd"
	for f in bridge host-local loopback portmap; do ln -s "/usr/lib/cni/$f" "$d/opt/cni/bin/$f"; done
	install -d -m 0755 "$d/etc/containerd"
	sed '/^\[proxy_plugins\]/,/^$/d' "$k/etc/containerd/config.toml" >"$d/etc/containerd/config.toml"
	ctr oci spec | jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
		jq 'del(.process.rlimits)' >"$d/etc/containerd/cri-base.json"
	kube_version | tr -d '\n' >"$d/kind/version"
	chmod 0644 "$d/etc/containerd/config.toml" "$d/etc/containerd/cri-base.json" "$d/kind/version"
}

# kind_node_preload imports the images of the kind node into the store its
# containerd will open (/var/lib/containerd), with a containerd of this
# machine's (the same Debian release) run for the purpose, and names the
# stand-ins as kubeadm asks for them. Layers are unpacked on first use, as in
# kind's own node images.
kind_node_preload() {
	local out=$cache/stage/kind-node-preload st name req have base from
	rm -rf "$out"
	mkdir -p "$out/var/lib/containerd"
	st=$(mktemp -d /run/workshop-preload.XXXXXX)
	cat >"$st/config.toml" <<-EOF
		version = 2
		root = "$out/var/lib/containerd"
		state = "$st/state"
		disabled_plugins = ["io.containerd.grpc.v1.cri"]
		[grpc]
		  address = "$st/sock"
		[ttrpc]
		  address = "$st/sock.ttrpc"
		[plugins."io.containerd.internal.v1.opt"]
		  path = "$st/opt"
	EOF
	containerd --config "$st/config.toml" >"$st/log" 2>&1 &
	preload_pid=$!
	# It stops with the script, whatever stops the script.
	trap 'kill "$preload_pid" 2>/dev/null || true' EXIT
	local c=(ctr --address "$st/sock" -n k8s.io)
	until "${c[@]}" version >/dev/null 2>&1; do
		kill -0 "$preload_pid" 2>/dev/null || { cat "$st/log" >&2; die "the containerd that preloads the kind node's images stopped"; }
		sleep 0.2
	done
	for name in "${kind_preload[@]}"; do
		"${c[@]}" images import --all-platforms --no-unpack --digests "$cache/archives/$name.tar" >/dev/null
	done
	have=$("${c[@]}" images ls -q)
	for req in $("$bin/kubeadm" config images list --kubernetes-version "$(kube_version)"); do
		grep -qxF "$req" <<<"$have" && continue
		base=${req%:*}
		case ${base##*/} in
		etcd) from=kube-etcd ;;
		coredns) from=coredns ;;
		pause) from=pause ;;
		*) die "kubeadm asks for $req, which the kind node has no stand-in for" ;;
		esac
		from=$(tags "$from")
		"${c[@]}" images tag "$(normalise "${from%% *}")" "$req" >/dev/null
	done
	# Pinned, as kind pins the images of its node: the kubelet never
	# collects them, since the node cannot pull them again.
	for name in $("${c[@]}" images ls -q); do
		"${c[@]}" images label "$name" io.cri-containerd.pinned=pinned >/dev/null
	done
	kill "$preload_pid"
	wait "$preload_pid" || true
	trap - EXIT
	rm -rf "$st"
}

# archives NAME... builds the images NAME... that are missing or stale and
# prints their archives.
archives() {
	mkdir -p "$cache"
	programs
	local name
	for name in "$@"; do
		build_image "$name" >/dev/null
		echo "$cache/archives/$name.tar"
	done
}

# tags NAME prints the names image NAME is tagged with: those the workshop's
# manifests use.
tags() {
	case $1 in
	pause) echo "$pause_image" ;;
	coredns) echo registry.k8s.io/coredns/coredns:v1.13.1 ;;
	gordon) echo prgcont/gordon:v1.0 ;;
	toolbox) echo workshop.local/toolbox:bookworm nicolaka/netshoot:v0.13 ;;
	etcd) echo docker.io/prgcont/etcd:v3.2.13 quay.io/coreos/etcd:v3.2.13 ;;
	etcd-3.3 | etcd-3.5) echo "quay.io/coreos/etcd:v$(etcd_release "$1")" ;;
	mysql) echo mysql:5.7 mysql:8.0 ;;
	olm) olm_image ;;
	kube-apiserver | kube-controller-manager | kube-scheduler | kube-proxy) echo "registry.k8s.io/$1:$(kube_version)" ;;
	kube-etcd) echo "workshop.local/kube-etcd:$("$bin/etcd" --version | sed -n 's/^etcd Version: //p')" ;;
	local-provisioner) echo workshop.local/local-provisioner:dev ;;
	mongo) echo mongo:4.0 ;;
	busybox) echo busybox:1.36 ;;
	nginx) echo nginx:1.27 ;;
	kind-node) echo "workshop.local/kind-node:$(kube_version)" ;;
	esac
}

# etcd_tool NAME prints the scripts/build-tools.sh tool whose etcd image
# NAME holds: etcd holds etcd-3.2's, the workshops' 3.2.13.
etcd_tool() {
	if [ "$1" = etcd ]; then echo etcd-3.2; else echo "$1"; fi
}

# etcd_release NAME prints the etcd release image NAME holds, the one its
# tool builds (its etcd binary is etcd-RELEASE).
etcd_release() {
	local b
	b=$("$root/scripts/build-tools.sh" --binaries "$(etcd_tool "$1")")
	b=${b%% *}
	echo "${b#etcd-}"
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
	[ -z "$prepare" ] || "$prepare"
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

# Two runs side by side (make test's local and kind parts) take turns: they
# write the same archives and stamps.
case ${1:-} in
build | import | archive | kind-node)
	mkdir -p "$cache"
	exec 9>"$cache/.lock"
	flock 9
	;;
esac

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
archive) archives "${@:2}" ;;
kind-node)
	mkdir -p "$cache"
	programs
	build_image kind-node >/dev/null
	echo "$cache/archives/kind-node.tar $(tags kind-node)"
	;;
mirrored) archives "${mirrored[@]}" ;;
*)
	sed -n '/^# usage:/,/^set -euo/{/^set/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
	;;
esac
