#!/usr/bin/env bash
# Runs the workshop's local cluster with no download: a real control plane
# (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, built from
# source by build-tools.sh) with two kinds of node: fake nodes, whose pods kwok
# simulates, and, when this machine can run containers, a real node
# (scripts/node.sh) whose pods really run. scripts/local-provisioner makes
# PersistentVolumeClaims bind on both. Learners with Docker use scripts/kind.sh
# instead; the tests run on both.
#
# usage: scripts/cluster.sh up|down|kubeconfig [NAME]
#   up          create, start or reuse cluster NAME, make kwok-NAME kubectl's
#               current context, add the real node, wait for the nodes and
#               the default ServiceAccount
#   down        delete cluster NAME, its real node and its provisioner (no
#               error if absent)
#   kubeconfig  print the path of a kubeconfig file for NAME alone
# NAME defaults to $CLUSTER_NAME, else "workshop"; $CLUSTER_NODES fake nodes (1).
# $CLUSTER_REAL_NODE: auto (the default) adds the real node when the machine
# can run containers and no other cluster holds it, else says why and goes on
# with fake nodes only; required fails instead; off never adds it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/toolbox.sh
. "$root/scripts/toolbox.sh"
cluster_script "$@"
nodes=${CLUSTER_NODES:-1}
real_node=${CLUSTER_REAL_NODE:-auto}
context=kwok-$name
own_kubeconfig=$dir/kubeconfig-$name.yaml
pidfile=$dir/local-provisioner.pid
# Like kind, add the context to the first file of $KUBECONFIG, else ~/.kube/config.
user_kubeconfig=${KUBECONFIG:-$HOME/.kube/config}
user_kubeconfig=${user_kubeconfig%%:*}

say() { echo "cluster.sh: $*" >&2; }
# kwokctl logs JSON when not on a terminal; the lines this script says suffice.
kctl() { kwokctl -v WARN --name "$name" "$@"; }
die() { say "$*"; exit 1; }

exists() { [ -f "$dir/kwok.yaml" ]; }

# healthy writes the cluster's own kubeconfig and asks the apiserver /readyz.
healthy() {
	write_kubeconfig 2>/dev/null &&
		kubectl --kubeconfig "$own_kubeconfig" get --raw /readyz --request-timeout=5s >/dev/null 2>&1
}

write_kubeconfig() {
	local tmp=$own_kubeconfig.tmp
	kctl get kubeconfig >"$tmp" && mv "$tmp" "$own_kubeconfig"
}

# Service addresses are kind's (10.96.0.0/16, DNS at 10.96.0.10), so they are
# told apart from kwok's fake pod addresses (10.0.0.0/16); scripts/node.sh
# reads them back from the cluster.
service_cidr=10.96.0.0/16
service_ip=10.96.0.1

# Node ports stop below the ports kwokctl gives the local clusters' API
# servers, etcds and controllers (from 32767 down, on this machine's
# loopback): kube-proxy sends a node port of every local address to its
# Service's pods, or refuses it while there are none, so a Service given
# an API server's port took that API server from every client here,
# kube-proxy included, for good (a soak lost its cluster so).
node_port_range=30000-32099

# kwok_config is the configuration every cluster is created with, so that a
# real node (scripts/node.sh) can join it at any time:
#   - kwok manages the fake nodes only (those annotated kwok.x-k8s.io/node=fake,
#     as `kwokctl scale node` makes them), and leaves the real node alone;
#   - the API server reaches kubelets at their InternalIP (the real node's
#     name resolves nowhere) with the admin certificate, for logs and exec;
#   - its certificate is valid for the kubernetes Service's address, which
#     pods connect to;
#   - node ports come from $node_port_range.
kwok_config() {
	cat <<EOF
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  kubeApiserverCertSANs: ["$service_ip"]
componentsPatches:
- name: kube-apiserver
  extraArgs:
  - {key: service-cluster-ip-range, value: "$service_cidr"}
  - {key: service-node-port-range, value: "$node_port_range"}
  - {key: kubelet-preferred-address-types, value: "InternalIP,Hostname"}
  - {key: kubelet-client-certificate, value: "$dir/pki/admin.crt"}
  - {key: kubelet-client-key, value: "$dir/pki/admin.key"}
- name: kwok-controller
  extraArgs:
  - {key: manage-all-nodes, value: "false", override: true}
  - {key: manage-nodes-with-annotation-selector, value: "kwok.x-k8s.io/node=fake"}
EOF
}

create() {
	local version config
	version=$(pinned_version "$root/scripts/tools/kubernetes" k8s.io/kubernetes)
	# Every binary is given, and KWOK_KUBE_VERSION matches them, so kwokctl
	# downloads nothing; kubectl it finds on PATH.
	# kwokctl picks "unused" ports by trying them, so two clusters created at
	# once pick the same ones: create one at a time. The lock is released
	# when this script exits. It lies beside the clusters directory, not in
	# it: kwokctl warns of any file there that is not a cluster.
	mkdir -p "$(dirname "$dir")"
	exec 9>"$(dirname "$(dirname "$dir")")/cluster-create.lock"
	flock 9
	# kwokctl copies the configuration into the cluster's kwok.yaml, which
	# `kwokctl start cluster` reads again. The lock's descriptor is closed
	# for kwokctl: the components it starts would otherwise inherit it, and
	# hold the lock, and block every other creation, as long as they run.
	config=$(mktemp)
	kwok_config >"$config"
	KWOK_KUBE_VERSION=$version kctl --config "$config" create cluster --runtime binary \
		--kube-apiserver-binary "$bin/kube-apiserver" \
		--kube-controller-manager-binary "$bin/kube-controller-manager" \
		--kube-scheduler-binary "$bin/kube-scheduler" \
		--etcd-binary "$bin/etcd" \
		--kwok-controller-binary "$bin/kwok" \
		--kubeconfig "$user_kubeconfig" \
		--timeout 5m 9>&- || { rm -f "$config"; return 1; }
	rm -f "$config"
}

# shellcheck source=scripts/wait.sh
. "$root/scripts/wait.sh"

# set_context makes the cluster's context current in the user's kubeconfig.
# kwokctl adds it only when it creates a cluster; a reused one may have lost it,
# so write the same entries kwokctl writes: its pki files and the server.
set_context() {
	local server u=(kubectl --kubeconfig "$user_kubeconfig" config)
	server=$(kubectl --kubeconfig "$own_kubeconfig" config view -o 'jsonpath={.clusters[0].cluster.server}')
	mkdir -p "$(dirname "$user_kubeconfig")"
	"${u[@]}" set-cluster "$context" --server "$server" --certificate-authority "$dir/pki/ca.crt" >/dev/null
	"${u[@]}" set-credentials "$context" --client-certificate "$dir/pki/admin.crt" --client-key "$dir/pki/admin.key" >/dev/null
	"${u[@]}" set-context "$context" --cluster "$context" --user "$context" >/dev/null
	"${u[@]}" use-context "$context" >/dev/null
}

provisioner_running() {
	local pid
	pid=$(cat "$pidfile" 2>/dev/null) || return 1
	# The command line check guards against a recycled pid.
	grep -q local-provisioner "/proc/$pid/cmdline" 2>/dev/null
}

stop_provisioner() {
	provisioner_running || { rm -f "$pidfile"; return 0; }
	local pid tries=50
	pid=$(cat "$pidfile")
	kill "$pid" 2>/dev/null || true # it may have just exited
	while provisioner_running && [ $((tries -= 1)) -gt 0 ]; do sleep 0.1; done
	rm -f "$pidfile"
	say "stopped provisioner (pid $pid)"
}

# build_provisioner rebuilds bin/local-provisioner when its sources changed,
# and then stops the running one so that up starts the new build.
build_provisioner() {
	local before
	before=$(cat "$bin/.stamp-local-provisioner" 2>/dev/null || true)
	"$root/scripts/build-tools.sh" local-provisioner
	[ "$(cat "$bin/.stamp-local-provisioner")" = "$before" ] || stop_provisioner
}

# start_provisioner runs it in a session of its own, so it outlives this script
# and its terminal, as kwokctl's own components do.
start_provisioner() {
	setsid nohup "$bin/local-provisioner" --kubeconfig "$own_kubeconfig" --volume-dir "$dir/volumes" \
		</dev/null >>"$dir/local-provisioner.log" 2>&1 9>&- &
	echo $! >"$pidfile"
	say "started provisioner (pid $!, log $dir/local-provisioner.log)"
}

up() {
	local start=$SECONDS did
	"$root/scripts/build-tools.sh" kubernetes etcd kwok
	build_provisioner
	if exists && healthy; then
		did="reused running cluster"
	else
		if exists; then
			say "cluster $name exists but its apiserver does not answer: starting it"
			stop_provisioner # it would keep talking to the old apiserver
			# kwokctl returns once the processes run, before the apiserver is ready.
			if kctl start cluster --timeout 30s && poll 30 healthy; then
				did="started stopped cluster"
			else
				say "cluster $name does not start: recreating it"
				down
			fi
		fi
		if [ -z "${did:-}" ]; then
			say "creating cluster $name"
			create
			did="created cluster"
		fi
		wait_until "apiserver ready" 120 healthy
	fi
	write_kubeconfig
	set_context
	local k=(kubectl --kubeconfig "$own_kubeconfig")
	if [ "$("${k[@]}" get nodes --no-headers 2>/dev/null | wc -l)" -lt "$nodes" ]; then
		kctl scale node --replicas "$nodes"
		say "scaled to $nodes fake node(s)"
	fi
	provisioner_running || start_provisioner
	add_real_node

	# One list a try: kubectl wait --all reads the nodes one by one, and
	# with a few dozen fake nodes no try of a few seconds gets through them.
	wait_until "nodes Ready" 120 nodes_ready "${k[@]}"
	wait_until "ServiceAccount default/default exists" 120 "${k[@]}" get serviceaccount default -n default
	wait_until "StorageClass standard exists" 60 "${k[@]}" get storageclass standard
	say "$did $name in $((SECONDS - start))s; kubectl context $context, kubeconfig $own_kubeconfig"
}

# nodes_ready KUBECTL... succeeds when the cluster has nodes and every one
# is Ready.
nodes_ready() {
	local ready
	ready=$("$@" get nodes -o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}') || return 1
	[ -n "$ready" ] && ! grep -qvx True <<<"$ready"
}

# add_real_node runs scripts/node.sh as $CLUSTER_REAL_NODE says. node.sh
# exits 3 when the machine cannot run containers and 4 when another cluster
# holds the node; it says why.
add_real_node() {
	local status=0
	case $real_node in
	off) return 0 ;;
	auto | required) ;;
	*) die "CLUSTER_REAL_NODE=$real_node: want auto, required or off" ;;
	esac
	"$root/scripts/node.sh" up "$name" || status=$?
	case $status in
	0) ;;
	3 | 4)
		[ "$real_node" = auto ] || die "CLUSTER_REAL_NODE=required, but the real node cannot join $name (see above)"
		say "no real node: cluster $name has fake nodes only, whose pods do not really run"
		;;
	*) die "scripts/node.sh up $name failed (status $status); its logs are in $dir/real-node" ;;
	esac
}

# unset_context removes what set_context wrote, as kind does on delete;
# kwokctl does too, but only for a cluster that still exists.
unset_context() {
	local u=(kubectl --kubeconfig "$user_kubeconfig" config)
	[ -f "$user_kubeconfig" ] || return 0
	if [ "$("${u[@]}" current-context 2>/dev/null)" = "$context" ]; then
		"${u[@]}" unset current-context >/dev/null
	fi
	"${u[@]}" delete-context "$context" >/dev/null 2>&1 || true
	"${u[@]}" delete-cluster "$context" >/dev/null 2>&1 || true
	"${u[@]}" delete-user "$context" >/dev/null 2>&1 || true
}

down() {
	# Before the apiserver goes: OLM's registry, then the node, which drains
	# its pods through it.
	"$root/scripts/olm.sh" down "$name" || say "scripts/olm.sh down $name failed: see above"
	"$root/scripts/node.sh" down "$name" || say "scripts/node.sh down $name failed: see above"
	stop_provisioner
	if exists; then
		kctl delete cluster --kubeconfig "$user_kubeconfig"
		say "deleted cluster $name"
	else
		say "cluster $name does not exist"
	fi
	unset_context
}

case $cmd in
up) up ;;
down) down ;;
kubeconfig)
	exists || die "cluster $name does not exist: run scripts/cluster.sh up $name"
	write_kubeconfig
	echo "$own_kubeconfig"
	;;
*)
	sed -n '/^# usage:/,/^set -euo/{/^set/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
	;;
esac
